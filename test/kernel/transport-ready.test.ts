// The local transport's channelsReady (src/kernel/transport.ts): a kernel answers kernel_info on shell
// while our stdin socket may still be connecting, and its stdin ROUTER drops an input_request for a
// routing id it has not seen yet — the cell's input() then waits forever. channelsReady resolves only
// once stdin has completed its handshake, after which the kernel's message arrives. Real ZeroMQ
// sockets stand in for the kernel's side: the order of binding is what the test controls.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import type * as Zmq from "zeromq";
import { createConnectionInfo, endpoint } from "../../src/kernel/local/connection-file.js";
import { ZmqTransport } from "../../src/kernel/local/zmq-transport.js";
import { MessageFactory } from "../../src/kernel/messages.js";
import { WireCodec } from "../../src/kernel/wire.js";

const zmq = createRequire(import.meta.url)("zeromq") as typeof Zmq;

test("channelsReady waits for the kernel's stdin socket; then an input_request reaches the host", {
  timeout: 60_000,
}, async () => {
  const info = await createConnectionInfo("python3");
  const identity = "host-identity";
  const transport = new ZmqTransport(info, identity);
  // The first message the host receives (a dropped one never comes: the test's own timeout ends it).
  const received = new Promise<string>((resolve) =>
    transport.onMessage((msg) => resolve(`${msg.channel}:${msg.header.msg_type}`)),
  );
  let ready = false;
  const channels = transport.channelsReady().then(() => {
    ready = true;
  });
  const kernelShell = new zmq.Router({ linger: 0 });
  const kernelStdin = new zmq.Router({ linger: 0 });
  try {
    // Shell is up (the kernel answers kernel_info there), stdin is not bound yet.
    await kernelShell.bind(endpoint(info, info.shell_port));
    transport.send("shell", new MessageFactory().kernelInfoRequest());
    await kernelShell.receive();
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(ready, false, "ready before the stdin socket could have connected");
    await kernelStdin.bind(endpoint(info, info.stdin_port));
    await channels;
    const codec = new WireCodec(info.key, info.signature_scheme);
    const request = new MessageFactory().create(
      "input_request",
      { prompt: "name? ", password: false },
      "stdin",
    );
    await kernelStdin.send([identity, ...codec.serialize(request)]);
    assert.equal(await received, "stdin:input_request");
  } finally {
    await transport.close();
    kernelShell.close();
    kernelStdin.close();
  }
});
