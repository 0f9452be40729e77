/**
 * The page's model of the hosts (src/view/page/hosts-model.ts; docs/view.md "The page"): what the
 * page shows follows from the API's messages alone — a state resets it, a host's events add its
 * calls and the cells they ran, a snapshot after dropped events keeps the cells and ends those whose
 * end was dropped, a host removed is gone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HubMessage, Key } from "../../src/view/page/api.js";
import { HostsModel } from "../../src/view/page/hosts-model.js";

const info = (id: string, startedAt = 1) => ({ id, pid: 10, kind: "mcp-stdio", cwd: "/w", startedAt });
const py: Key = { kind: "python", sessionId: "default", cwd: "/w" };
const nb: Key = { kind: "notebook", path: "/w/a.ipynb" };
let seq = 0;
const ev = (hostId: string, event: Record<string, unknown>): HubMessage =>
  ({ hostId, type: "event", event: { seq: ++seq, at: 1000 + seq, ...event } }) as HubMessage;
const session = (key: Key, busy: boolean) => ({
  key,
  started: true,
  alive: true,
  busy,
  waiting: 0,
  lastUsed: 0,
});

test("a cell is matched to the open call of the tool that runs on its kind of session", () => {
  const m = new HostsModel();
  m.reset({ hosts: [{ host: info("h"), sessions: [], runs: [], calls: [] }] });
  m.apply(ev("h", { type: "call-started", callId: "c1", tool: "python", params: {} }));
  m.apply(ev("h", { type: "call-started", callId: "c2", tool: "notebook", params: {} }));
  m.apply(ev("h", { type: "call-started", callId: "c3", tool: "kernels", params: {} }));
  m.apply(ev("h", { type: "cell-started", cellRun: 1, key: py, code: "1" }));
  m.apply(ev("h", { type: "cell-started", cellRun: 2, key: nb, code: "2" }));
  m.apply(ev("h", { type: "cell-started", cellRun: 3, key: { kind: "per-call", of: py }, code: "3" }));
  const h = m.hosts.get("h")!;
  assert.deepEqual(
    h.cells.map((c) => [c.cellRun, c.callId]),
    [
      [1, "c1"],
      [2, "c2"],
      [3, "c1"],
    ],
  );
  assert.equal(m.running(h, py)?.cellRun, 1);
  m.apply(ev("h", { type: "cell-output", cellRun: 1, output: { kind: "stream", text: "hi\n" } }));
  m.apply(ev("h", { type: "cell-ended", cellRun: 1, status: "error" }));
  assert.equal(h.cells[0].tail, "hi\n");
  assert.equal(h.cells[0].status, "error");
  assert.equal(m.running(h, py), undefined);
  const end = m.apply(
    ev("h", {
      type: "call-ended",
      callId: "c1",
      tool: "python",
      durationMs: 5,
      texts: ["a", "b"],
      images: 1,
      isError: true,
    }),
  );
  assert.deepEqual(end, { what: "host", hostId: "h", calls: ["c1"] });
  assert.deepEqual(h.calls[0].ended, {
    at: h.calls[0].ended!.at,
    durationMs: 5,
    texts: ["a", "b"],
    images: 1,
    isError: true,
  });
});

test("a snapshot keeps the cells and ends those whose session no call holds; a host removed is gone; a state resets", () => {
  const m = new HostsModel();
  m.reset({ hosts: [] });
  assert.deepEqual(m.apply({ type: "host-added", host: info("h") }), { what: "hosts" });
  m.apply(ev("h", { type: "call-started", callId: "c1", tool: "python", params: {} }));
  m.apply(ev("h", { type: "cell-started", cellRun: 7, key: py, code: "x" }));
  m.apply(ev("h", { type: "cell-started", cellRun: 8, key: nb, code: "y" }));
  m.apply({
    hostId: "h",
    type: "snapshot",
    host: info("h"),
    sessions: [session(py, false), session(nb, true)],
    runs: [],
    calls: [{ callId: "c1", tool: "python", params: {}, startedAt: 1 }],
  });
  const h = m.hosts.get("h")!;
  assert.deepEqual(
    h.cells.map((c) => [c.cellRun, c.status]),
    [
      [7, "gone"],
      [8, undefined],
    ],
  );
  // Events of a host the page does not know change nothing.
  assert.deepEqual(m.apply(ev("other", { type: "call-started", callId: "x", tool: "python", params: {} })), {
    what: "nothing",
  });
  m.apply({ type: "host-added", host: info("g", 0) });
  assert.deepEqual(
    m.list().map((x) => x.info.id),
    ["g", "h"],
  );
  m.apply({ type: "host-removed", hostId: "h" });
  assert.deepEqual([...m.hosts.keys()], ["g"]);
  m.reset({ hosts: [{ host: info("k"), sessions: [], runs: [], calls: [] }] });
  assert.deepEqual([...m.hosts.keys()], ["k"]);
});

test("a page that comes late has the calls' cells from the state, running ones too; a host's snapshot with cells replaces the page's", () => {
  const m = new HostsModel();
  const call = { callId: "c1", tool: "python", params: {}, startedAt: 1 };
  const ran = {
    cellRun: 3,
    key: py,
    code: "x = 1",
    startedAt: 2,
    endedAt: 3,
    status: "ok" as const,
    callId: "c1",
    tail: "",
  };
  const running = { cellRun: 4, key: py, code: "work()", startedAt: 4, callId: "c1", tail: "so far\n" };
  m.reset({
    hosts: [
      { host: info("h"), sessions: [session(py, true)], runs: [], calls: [call], cells: [ran, running] },
    ],
  });
  const h = m.hosts.get("h")!;
  assert.deepEqual(
    h.cells.map((c) => [c.cellRun, c.callId, c.status]),
    [
      [3, "c1", "ok"],
      [4, "c1", undefined],
    ],
  );
  assert.equal(m.running(h, py)?.code, "work()");
  // Its events go on from there.
  m.apply(ev("h", { type: "cell-output", cellRun: 4, output: { kind: "stream", text: "more\n" } }));
  assert.equal(m.hosts.get("h")!.cells[1].tail, "so far\nmore\n");
  // A snapshot after dropped events carries the host's own list, ends included: it is taken as is.
  m.apply({
    hostId: "h",
    type: "snapshot",
    host: info("h"),
    sessions: [session(py, false)],
    runs: [],
    calls: [call],
    cells: [ran, { ...running, endedAt: 9, status: "error" as const }],
  });
  assert.deepEqual(
    m.hosts.get("h")!.cells.map((c) => [c.cellRun, c.status]),
    [
      [3, "ok"],
      [4, "error"],
    ],
  );
});
