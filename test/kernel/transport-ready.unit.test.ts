// The local transport's channelsReady (src/kernel/transport.ts): a kernel answers kernel_info on shell
// while our stdin socket may still be connecting, and its stdin ROUTER drops an input_request for a
// routing id it has not seen yet — the cell's input() then waits forever. channelsReady resolves only
// once stdin has completed its handshake, after which the kernel's message arrives. Real ZeroMQ
// sockets stand in for the kernel's side: the order of binding is what the test controls.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import net from "node:net";
import { test } from "node:test";
import type * as Zmq from "zeromq";
import { KernelClient } from "../../src/kernel/client.js";
import { createConnectionInfo } from "../../src/kernel/local/connection-file.js";
import { MessageFactory } from "../../src/kernel/messages.js";
import { WireCodec } from "../../src/kernel/wire.js";
import { endpoint } from "../../src/kernel/zmq/connection.js";
import { ZmqTransport } from "../../src/kernel/zmq/transport.js";

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

// A start seen once under load: the kernel answered kernel_info on shell, but no IOPub message ever
// reached us, and the start waited out its 60 s. Here the IOPub connection goes through a TCP relay
// that swallows its first connection (the subscription never joins; ZeroMQ would wait out its 30 s
// handshake bound) and relays later ones to the kernel's real IOPub socket. waitReady sees shell
// answer with IOPub silent, makes the IOPub connection again, and the kernel is ready.
test("waitReady: shell answers but IOPub stays silent → the IOPub socket is connected again, once", {
  timeout: 60_000,
}, async () => {
  const info = await createConnectionInfo("python3");
  const codec = new WireCodec(info.key, info.signature_scheme);
  const kernelShell = new zmq.Router({ linger: 0 });
  const kernelIOPub = new zmq.Publisher({ linger: 0 });
  await kernelShell.bind(endpoint(info, info.shell_port));
  await kernelIOPub.bind("tcp://127.0.0.1:*");
  const iopubPort = Number(new URL(kernelIOPub.lastEndpoint!.replace("tcp:", "http:")).port);
  // The relay listens where the host's IOPub socket connects (the connection file's port).
  const connections: net.Socket[] = [];
  const relay = net.createServer((client) => {
    connections.push(client);
    if (connections.length === 1) return; // swallowed: nothing goes either way
    const upstream = net.connect(iopubPort, "127.0.0.1");
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => relay.listen(info.iopub_port, "127.0.0.1", () => resolve()));
  // The fake kernel: every kernel_info_request is answered on shell, with busy/idle on IOPub.
  const serve = (async () => {
    const factory = new MessageFactory();
    try {
      for await (const [identity, ...frames] of kernelShell) {
        const request = codec.deserialize(frames as Buffer[], "shell");
        if (!request) continue;
        const parent = request.header;
        const status = (state: "busy" | "idle") =>
          codec.serialize(factory.create("status", { execution_state: state }, "iopub", parent));
        await kernelIOPub.send(status("busy"));
        const reply = factory.create(
          "kernel_info_reply",
          {
            status: "ok",
            protocol_version: "5.3",
            implementation: "fake",
            language_info: { name: "python" },
          },
          "shell",
          parent,
        );
        await kernelShell.send([identity, ...codec.serialize(reply)]);
        await kernelIOPub.send(status("idle"));
      }
    } catch {
      // closed
    }
  })();
  const transport = new ZmqTransport(info, "host-identity");
  try {
    const client = new KernelClient(transport, new MessageFactory());
    const ready = await client.waitReady();
    assert.equal(ready.implementation, "fake");
    assert.equal(transport.iopubReconnects, 1);
    assert.equal(connections.length, 2, "the swallowed connection, then the one that works");
  } finally {
    await transport.close();
    kernelShell.close();
    kernelIOPub.close();
    for (const c of connections) c.destroy();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
    await serve;
  }
});

// Seen once in a run of the cancel tests: a ping that could not be sent yet (its socket's queue was
// full: nobody listened on the heartbeat port, and past the high-water mark of 1,000 queued pings a
// send waits) made the next tick's send throw EBUSY synchronously, out of the timer: an uncaught
// exception that ends the host. Now one ping is in flight at a time; an unanswered one counts misses.
test("a heartbeat nobody answers: one ping in flight, the silence reported as a hint, no exception", {
  timeout: 60_000,
}, async () => {
  const info = await createConnectionInfo("python3");
  const transport = new ZmqTransport(info, "host-identity", { intervalMs: 1, misses: 1500 });
  const crashed: unknown[] = [];
  const onCrash = (err: unknown) => crashed.push(err);
  process.on("uncaughtException", onCrash);
  let lost: string | undefined;
  transport.onLost((reason) => {
    lost = reason;
  });
  try {
    transport.ready();
    // 1,500 ticks with the one ping unanswered: the transport says how long it has been silent.
    while (transport.stats().heartbeatSilentMs === undefined) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(crashed, []);
    assert.equal(lost, undefined, "a silent heartbeat is not a lost kernel (its process decides)");
  } finally {
    process.off("uncaughtException", onCrash);
    await transport.close();
  }
});
