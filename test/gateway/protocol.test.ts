// The channels WebSocket's two framings: binary `v1.kernel.websocket.jupyter.org` when the server
// offers it, the legacy JSON protocol when it does not (or when forced); binary buffers both ways.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { decodeMessage, encodeMessage } from "../../src/kernel/gateway/index.js";
import { type ConnectedKernel, GatewayBackend, type JupyterMessage } from "../../src/kernel/index.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

let modern: JupyterServerHandle;
let legacy: JupyterServerHandle;

before(async () => {
  [modern, legacy] = await Promise.all([
    startJupyterServer(),
    // An empty preference makes the server answer without a subprotocol (the legacy protocol only).
    startJupyterServer({ args: ["--ServerApp.kernel_ws_protocol="] }),
  ]);
});
after(async () => {
  await Promise.all([modern?.stop(), legacy?.stop()]);
});

/** The same execution on every framing: output, a result, an error, and a comm with binary buffers. */
async function exercise(kernel: ConnectedKernel): Promise<void> {
  const r = await kernel.execute("print('out'); 6 * 7");
  assert.equal(r.text, "out\n");
  assert.equal(r.displays[0]?.text, "42");
  const e = await kernel.execute("1/0");
  assert.equal(e.error?.name, "ZeroDivisionError");
  const comms: JupyterMessage[] = [];
  await kernel.execute(
    "from ipykernel.comm import Comm\nc = Comm(target_name='nbagent-test', data={'k': 1}, buffers=[b'\\x00\\x01binary\\xff'])",
    { onIOPub: (m) => m.header.msg_type === "comm_open" && comms.push(m) },
  );
  assert.equal(comms.length, 1);
  assert.deepEqual(
    comms[0].buffers?.map((b) => Buffer.from(b).toString("latin1")),
    ["\x00\x01binary\xff"],
  );
  // Client → kernel: a comm_msg with a buffer, which the kernel's comm echoes back reversed.
  await kernel.execute(
    "def _target(comm, msg):\n    comm.on_msg(lambda m: comm.send({'n': len(m['buffers'])}, buffers=[bytes(m['buffers'][0])[::-1]]))\n" +
      "get_ipython().kernel.comm_manager.register_target('nbagent-echo', _target)",
  );
  const echoed = new Promise<JupyterMessage>((resolve) => {
    const factory = kernel.client.factory;
    const commId = "echo-1";
    // comm messages are not among the typed builders: a built message with its type replaced
    const send = (type: string, content: Record<string, unknown>, buffers?: Uint8Array[]) => {
      const msg = { ...factory.create("kernel_info_request", {} as never, "shell"), content, buffers };
      msg.header = { ...msg.header, msg_type: type as "kernel_info_request" };
      kernel.client.send("shell", msg, (m) => {
        if (m.header.msg_type === "comm_msg" && m.channel === "iopub") resolve(m);
      });
    };
    send("comm_open", { comm_id: commId, target_name: "nbagent-echo", data: {} });
    send("comm_msg", { comm_id: commId, data: {} }, [Buffer.from([1, 2, 3, 250])]);
  });
  const reply = await echoed;
  assert.deepEqual(reply.content.data, { n: 1 });
  assert.deepEqual([...(reply.buffers?.[0] ?? [])], [250, 3, 2, 1]);
}

describe("framing", () => {
  for (const [name, server, wsProtocol, expected] of [
    ["binary v1 when the server offers it", () => modern, "auto", "v1"],
    ["JSON when forced by the option", () => modern, "json", "json"],
    ["JSON fallback when the server offers no subprotocol", () => legacy, "auto", "json"],
  ] as const) {
    test(name, async () => {
      const s = server();
      const backend = new GatewayBackend({ url: s.url, token: s.token, wsProtocol });
      try {
        const kernel = await backend.startKernel({});
        assert.equal(backend.connection(kernel)?.protocol, expected);
        await exercise(kernel);
      } finally {
        await backend.dispose();
      }
    });
  }
});

describe("codec", () => {
  const msg: JupyterMessage = {
    header: {
      msg_id: "m1",
      msg_type: "comm_msg",
      session: "s",
      username: "u",
      date: "2026-01-01T00:00:00Z",
      version: "5.3",
    },
    parent_header: {},
    metadata: { a: 1 },
    content: { comm_id: "c", data: { ü: "ß" } },
    buffers: [Buffer.from([0, 1, 2]), new Uint8Array([255])],
  };
  for (const protocol of ["v1", "json"] as const) {
    test(`${protocol}: a message with buffers survives a round trip`, () => {
      const frame = encodeMessage(protocol, "shell", msg);
      assert.ok(Buffer.isBuffer(frame), "buffers force a binary frame");
      const back = decodeMessage(protocol, frame as Buffer, true);
      assert.equal(back?.channel, "shell");
      assert.deepEqual(back?.header, msg.header);
      assert.deepEqual(back?.content, msg.content);
      assert.deepEqual(back?.metadata, msg.metadata);
      assert.deepEqual(
        back?.buffers?.map((b) => [...b]),
        [[0, 1, 2], [255]],
      );
    });
  }
  test("garbage is reported as null, not thrown", () => {
    assert.equal(decodeMessage("v1", Buffer.from([1, 2, 3]), true), null);
    assert.equal(decodeMessage("json", Buffer.from("{not json"), false), null);
    assert.equal(decodeMessage("json", Buffer.from('{"header":{},"channel":"nope"}'), false), null);
  });
});
