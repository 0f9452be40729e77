/**
 * The gateway backend across a real network (docs/backends.md "Across a real network"): the server in
 * a network namespace of its own, joined by a veth pair, 50 ms of round trip in a relay, packets lost
 * by iptables and the link cut with `ip link set down` (test/gateway/netns.ts). What holds: a warm call
 * is one request and the cell's messages (no REST round trip); a 5 s cut while a cell prints loses and
 * repeats nothing; a call's deadline still bounds it during a cut; a cut longer than the reconnect
 * window ends the call with a text that says so instead of waiting forever, and the next call once the
 * link is back joins the same kernel, its state kept.
 * Skipped where a network namespace cannot be made (not root, no iproute2 or iptables).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type StdioServer, stdioServer, textOf } from "../mcp/helpers.js";
import { netnsProblem, type RemoteServer, remoteServer } from "./netns.js";

const SKIP = netnsProblem() ?? false;

let remote: RemoteServer;
let mcp: StdioServer;

before(async () => {
  if (SKIP) return;
  remote = await remoteServer({ rttMs: 50 });
  mcp = await stdioServer([], {
    NBAGENT_GATEWAY_URL: remote.url,
    NBAGENT_GATEWAY_TOKEN: remote.server.token,
    NBAGENT_GATEWAY_RECONNECT_SECONDS: "6",
    NBAGENT_VIEW: "0",
  });
});

after(async () => {
  await mcp?.client.close();
  await remote?.stop();
});

async function call(code: string, extra: Record<string, unknown> = {}): Promise<string> {
  return textOf(await mcp.client.callTool({ name: "python", arguments: { cells: [{ code }], ...extra } }));
}

/** A cell that prints 0…n-1, one line every `every` seconds. */
const counting = (n: number, every: number) =>
  `import time\nfor i in range(${n}):\n    print(i, flush=True)\n    time.sleep(${every})`;

test("a warm call on a 50 ms link is one request and the cell's messages: no REST round trip", {
  skip: SKIP,
}, async () => {
  assert.equal(await call("x = 1"), "(no output)");
  const requests = remote.requests.length;
  const frames = { ...remote.frames };
  assert.equal(await call("print(x + 1)"), "2");
  assert.deepEqual(remote.requests.slice(requests), [], "no HTTP request during a warm call");
  assert.equal(remote.frames.up - frames.up, 1, "one message up: the execute_request");
  // status busy, execute_input, stream, execute_reply, status idle
  assert.equal(remote.frames.down - frames.down, 5);
});

test("a 5 s cut (and 1% packet loss) while a cell prints: every line arrives once", {
  skip: SKIP,
}, async () => {
  remote.loss(0.01);
  try {
    const frames = remote.frames.down;
    const running = call(counting(40, 0.25));
    // Cut once the cell has printed (its lines are coming down), for 5 s of the cell's 10.
    while (remote.frames.down - frames < 8) await new Promise((r) => setImmediate(r));
    remote.cut();
    await new Promise((r) => setTimeout(r, 5000)); // the length of the cut itself, not a wait for an event
    remote.restore();
    const text = await running;
    assert.equal(text, Array.from({ length: 40 }, (_, i) => String(i)).join("\n"));
  } finally {
    remote.loss(0);
  }
});

test("during a cut a call's deadline bounds it; a cut longer than the reconnect window ends the call and says so, and the next call finds the kernel's state", {
  skip: SKIP,
}, async () => {
  assert.equal(await call("y = 2"), "(no output)");
  remote.cut();
  try {
    const bounded = await call("print(y)", { timeout: 5 });
    assert.match(bounded, /Cell 1 reached the call's timeout of 5 seconds/);
  } finally {
    remote.restore();
  }
  assert.match(await call("z = 3\nprint('back')"), /(^|\n)back(\n|$)/);
  const frames = remote.frames.down;
  // 20 s of printing: still running on the server when the link is cut past the window; the call
  // after the cut waits behind what is left of it.
  const long = call(counting(80, 0.25), { timeout: 3600 });
  while (remote.frames.down - frames < 4) await new Promise((r) => setImmediate(r));
  remote.cut();
  try {
    // Without a liveness check the socket stays open and silent, and the call would wait its hour.
    const text = await long;
    assert.match(
      text,
      new RegExp(
        `^0\n[^]*The connection to this session's kernel was lost while cell 1 ran \\(the gateway at [^ ]+ stayed unreachable for \\d+ s after the kernel's connection was lost \\(last: could not (reach|connect to) the gateway at ${remote.url.replace(/[.]/g, "\\.")}[^]*The kernel was not stopped`,
      ),
    );
    assert.doesNotMatch(text, /died|state is gone/);
    // Still cut: nothing runs, nothing new is started, and the text says the kernel may be there.
    const meanwhile = await call("print(z)");
    assert.match(
      meanwhile,
      /^Error: This session's kernel could not be reached: its connection was lost at [0-9:]+ [\s\S]*Nothing ran and no new kernel was started/,
    );
    const listed = textOf(await mcp.client.callTool({ name: "kernels", arguments: {} }));
    assert.match(
      listed,
      /python session "default" \[gateway [^\]]+\]: its connection to the kernel was lost \(the gateway stayed unreachable\); the kernel may still run there with its state, and the next call on it connects again/,
    );
  } finally {
    remote.restore();
  }
  // The link is back: the same kernel, its state kept (z from before the cut).
  const back = await call("print(z)");
  assert.match(back, /^3\n/);
  assert.match(
    back,
    /it was made again before cell 1, and the same kernel answered: variables, imports and other state from earlier calls are kept/,
  );
  assert.equal(await call("print(z * 2)"), "6");
});
