/**
 * What a host's view socket tells a viewer that connects late, and one that watches throughout
 * (src/view/host.ts, src/view/wire.ts; docs/view.md "Across processes"), on real kernels: a call that
 * queues behind a busy session is counted in the listing as it queues (and the kernels tool says the
 * same), and leaves the count when it has its turn; a viewer that connects while a cell runs gets
 * that cell in its snapshot — running, with its call and what it printed so far — and one that
 * connects later gets the cells of the calls before it. Cells wait on gate files the test creates;
 * every step waits for the messages themselves.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, test } from "node:test";
import { createToolbox } from "../../src/tools/index.js";
import { serveViewSocket } from "../../src/view/host.js";
import {
  type HostMessage,
  noteCall,
  noteCell,
  RECENT_CALLS,
  type WireCall,
  type WireCell,
} from "../../src/view/wire.js";
import { type Json, resultText } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-late-"));
const cwd = mkdtempSync(join(root, "w-"));
const box = createToolbox({
  settings: testSettings(),
  cwd,
  runtime: { stateRoot: join(root, "state") },
  waitSeconds: 600,
});
const sockets: Socket[] = [];
after(async () => {
  for (const s of sockets) s.destroy();
  await box.dispose();
  rmSync(root, { recursive: true, force: true });
});

const tool = (name: string) => (params: Json) =>
  box.tools.find((t) => t.name === name)!.execute("t", params) as Promise<Json>;
const py = tool("python");
const kernels = tool("kernels");

/** Python that prints a line, then blocks until `path` exists. */
const gated = (line: string, path: string) =>
  `import os, time\nprint(${JSON.stringify(line)}, flush=True)\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)`;

/** A viewer of the host's socket: every message it got, and a wait for the next that matches. */
function viewer(path: string) {
  const got: HostMessage[] = [];
  let wake: (() => void) | undefined;
  const socket = connect(path);
  sockets.push(socket);
  createInterface({ input: socket }).on("line", (line) => {
    got.push(JSON.parse(line) as HostMessage);
    wake?.();
  });
  return {
    got,
    async waitFor<T extends HostMessage>(pred: (m: HostMessage) => m is T, from = 0): Promise<T> {
      for (;;) {
        const found = got.slice(from).find(pred);
        if (found) return found;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}

type Snapshot = HostMessage & { type: "snapshot" };
type Listing = HostMessage & { type: "sessions" };
const isSnapshot = (m: HostMessage): m is Snapshot => m.type === "snapshot";
const waitingIs =
  (n: number) =>
  (m: HostMessage): m is Listing =>
    m.type === "sessions" &&
    m.sessions.some((s) => s.key.kind === "python" && s.key.sessionId === "s" && s.waiting === n);

test("a queued call shows in the listing as it queues; late viewers get the calls' cells, running ones too", {
  timeout: 120_000,
}, async () => {
  const host = await serveViewSocket(box, "batch", cwd);
  assert.ok(host, "the host has a view socket");
  try {
    const watcher = viewer(host.path);
    await watcher.waitFor(isSnapshot);
    const gate = join(cwd, "go");
    const first = py({ cells: [{ code: gated("in first", gate) }], session: "s" });
    // The first call's cell runs (its line came) before the second one is sent.
    await watcher.waitFor(
      (m): m is HostMessage =>
        m.type === "event" &&
        m.event.type === "cell-output" &&
        m.event.output.kind === "stream" &&
        m.event.output.text.includes("in first"),
    );
    const from = watcher.got.length;
    const second = py({ cells: [{ code: "print('second ran')" }], session: "s" });
    // Its queueing is an event, and the listing that follows counts it.
    await watcher.waitFor(
      (m): m is HostMessage =>
        m.type === "event" && m.event.type === "session" && m.event.change === "queued",
      from,
    );
    await watcher.waitFor(waitingIs(1), from);
    // The kernels tool reads the same queue.
    assert.match(
      resultText(await kernels({ action: "list" })),
      /python session "s"[^\n]*: busy for [^\n]*; 1 call waiting for it/,
    );

    // A viewer that comes now: the running cell with its call and what it printed, and the wait.
    const late = viewer(host.path);
    const snap = await late.waitFor(isSnapshot);
    const calls = snap.calls.filter((c) => c.tool === "python");
    assert.equal(calls.length, 2);
    const cells = snap.cells ?? [];
    assert.equal(cells.length, 1, JSON.stringify(cells));
    const running: WireCell = cells[0];
    assert.equal(running.callId, calls[0].callId);
    assert.equal(running.endedAt, undefined);
    assert.match(running.code, /print\("in first", flush=True\)/);
    assert.equal(running.tail, "in first\n");
    assert.deepEqual(running.key, { kind: "python", sessionId: "s", cwd });
    assert.equal(snap.sessions.find((s) => s.key.kind === "python")?.waiting, 1);

    writeFileSync(gate, "");
    assert.doesNotMatch(resultText(await first), /Error/);
    assert.match(resultText(await second), /second ran/);
    // Out of the line once it had its turn.
    await watcher.waitFor(waitingIs(0), from);

    // A viewer that comes after: both calls' cells, ended, each with its call.
    const later = viewer(host.path);
    const done = await later.waitFor(isSnapshot);
    assert.deepEqual(
      (done.cells ?? []).map((c) => [c.callId, c.status, c.tail]),
      [
        [calls[0].callId, "ok", "in first\n"],
        [calls[1].callId, "ok", "second ran\n"],
      ],
    );
  } finally {
    await host.close();
  }
});

test("a viewer that falls behind gets a fresh snapshot after the events it still had: nothing is applied twice", {
  timeout: 120_000,
}, async () => {
  const host = await serveViewSocket(box, "batch", cwd);
  assert.ok(host, "the host has a view socket");
  try {
    const slow = viewer(host.path);
    await slow.waitFor(isSnapshot);
    // It stops reading: the socket's buffers fill, then its queue (2,000 events) overflows.
    const socket = sockets.at(-1)!;
    socket.pause();
    const r = await py({
      cells: [
        { code: "from IPython.display import display\nfor i in range(4000): display(i)" },
        { code: "print('second')" },
      ],
    });
    assert.doesNotMatch(resultText(r), /^Error/);
    socket.resume();
    // What the hub keeps from the messages, as it keeps it (hub.ts handle()).
    let calls: WireCall[] = [];
    let cells: WireCell[] = [];
    let snapshots = 0;
    let at = 0;
    const take = async (until: () => boolean) => {
      while (!until()) {
        const m =
          at < slow.got.length ? slow.got[at] : await slow.waitFor((_m): _m is HostMessage => true, at);
        at++;
        if (m.type === "snapshot") {
          snapshots++;
          calls = m.calls.map((c) => ({ ...c }));
          cells = (m.cells ?? []).map((c) => ({ ...c }));
        } else if (m.type === "event") {
          noteCall(calls, m.event, RECENT_CALLS);
          noteCell(cells, calls, m.event);
        }
      }
    };
    await take(() => snapshots >= 2);
    // One more call: once its end is read, so is everything sent before it.
    await py({ cells: [{ code: "'marker'" }] });
    await take(
      () =>
        calls.filter((c) => c.tool === "python" && c.ended).length >= 2 &&
        cells.some((c) => c.code === "'marker'" && c.endedAt),
    );
    cells = cells.filter((c) => c.code !== "'marker'");
    assert.equal(snapshots, 2, "events were dropped, and a fresh snapshot said what they did");
    const runs = cells.map((c) => c.cellRun);
    assert.deepEqual(runs, [...new Set(runs)], `no cell twice: ${JSON.stringify(runs)}`);
    // Both cells, ended, each with the end of what it showed (display texts follow one another).
    assert.deepEqual(
      cells.slice(-2).map((c) => [c.status, c.tail.slice(-7)]),
      [
        ["ok", "9983999"],
        ["ok", "second\n"],
      ],
    );
  } finally {
    await host.close();
  }
});

test("a viewer that connects after the agent touched notebooks gets them in the snapshot, latest last, each once", async () => {
  const host = await serveViewSocket(box, "batch", cwd);
  assert.ok(host, "the host has a view socket");
  const nb = tool("notebook");
  try {
    for (const name of ["a.ipynb", "b.ipynb"]) {
      const r = await nb({ action: "insert", notebook_path: name, cell_index: 0, content: "1" });
      assert.notEqual(r.isError, true, resultText(r));
    }
    await nb({ action: "read", notebook_path: "a.ipynb" });
    const late = viewer(host.path);
    const snap = await late.waitFor(isSnapshot);
    assert.deepEqual(snap.notebooks, [join(cwd, "b.ipynb"), join(cwd, "a.ipynb")]);
  } finally {
    await host.close();
  }
});
