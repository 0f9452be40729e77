/**
 * The notebook feed from a host's events alone (src/view/notebook-feed.ts), without a kernel: a
 * python session's notebook grows with each cell, update_display_data replaces the output that
 * carries its display id, clear_output(wait) waits, and an older host's events (display and error
 * text without the whole output) still show, as text.
 */
import assert from "node:assert/strict";
import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { CellOutput, RuntimeEvent, StampedEvent } from "../../src/runtime/events.js";
import { NotebookFeed } from "../../src/view/notebook-feed.js";
import type { ViewMessage } from "../../src/view/protocol.js";

const key = { kind: "python" as const, sessionId: "main", cwd: "/w" };
const path = `session:h1:${JSON.stringify(["python", "main", "/w"])}`;

function feed(): { feed: NotebookFeed; told: ViewMessage[]; emit: (e: RuntimeEvent) => void } {
  const told: ViewMessage[] = [];
  // The host is busy with a python call throughout, so no export is asked.
  const f = new NotebookFeed({ tell: (m) => told.push(m), act: async () => undefined });
  f.hostSnapshot("h1", [], [{ callId: "c1", tool: "python", params: {}, startedAt: 0 }], []);
  let seq = 0;
  return { feed: f, told, emit: (e) => f.event("h1", { ...e, seq: ++seq, at: 0 } as StampedEvent) };
}

const out = (cellRun: number, output: CellOutput | Record<string, unknown>): RuntimeEvent =>
  ({ type: "cell-output", cellRun, output }) as RuntimeEvent;

test("a session's cells grow from the events: inserted, running, outputs, idle with the count", () => {
  const { feed: f, told, emit } = feed();
  emit({ type: "cell-started", cellRun: 1, key, code: "h = display('a', display_id=True)" });
  emit(
    out(1, {
      kind: "display",
      mimeTypes: ["text/plain"],
      text: "'a'",
      displayId: "d1",
      output: { output_type: "display_data", data: { "text/plain": "'a'" }, metadata: {} },
    }),
  );
  emit(
    out(1, {
      kind: "display",
      mimeTypes: ["text/plain"],
      text: "'b'",
      displayId: "d1",
      update: true,
      output: { output_type: "display_data", data: { "text/plain": "'b'" }, metadata: {} },
    }),
  );
  emit(out(1, { kind: "clear", wait: true }));
  emit(out(1, { kind: "stream", name: "stdout", text: "after\n", skippedLines: 0 }));
  emit({ type: "cell-ended", cellRun: 1, status: "ok", executionCount: 1 });
  assert.deepEqual(told, [
    {
      kind: "notebook",
      path,
      cells: [],
      language: "python",
      title: "python session main",
      session: { hostId: "h1", key },
    },
    {
      kind: "cell-inserted",
      path,
      index: 0,
      cell: {
        id: "cell-1",
        cell_type: "code",
        source: "h = display('a', display_id=True)",
        outputs: [],
        execution_count: null,
      },
    },
    { kind: "cell-running", path, id: "cell-1", state: "running" },
    {
      kind: "output-appended",
      path,
      id: "cell-1",
      output: { output_type: "display_data", data: { "text/plain": "'a'" }, metadata: {} },
    },
    {
      kind: "output-replaced",
      path,
      id: "cell-1",
      index: 0,
      output: { output_type: "display_data", data: { "text/plain": "'b'" }, metadata: {} },
    },
    { kind: "outputs-cleared", path, id: "cell-1", wait: true },
    {
      kind: "output-appended",
      path,
      id: "cell-1",
      output: { output_type: "stream", name: "stdout", text: "after\n" },
    },
    { kind: "cell-running", path, id: "cell-1", state: "idle", execution_count: 1 },
  ]);
  const [snap] = f.notebooks();
  assert.ok(snap.kind === "notebook");
  assert.deepEqual(snap.cells[0].outputs, [{ output_type: "stream", name: "stdout", text: "after\n" }]);
});

test("an older host's display and error events (text only) still show, as text", () => {
  const { feed: f, emit } = feed();
  emit({ type: "cell-started", cellRun: 1, key, code: "1/0" });
  emit(out(1, { kind: "display", mimeTypes: ["text/html", "text/plain"], text: "a table" }));
  emit(out(1, { kind: "error", text: "ZeroDivisionError: division by zero\n" }));
  emit({ type: "cell-ended", cellRun: 1, status: "error" });
  const [snap] = f.notebooks();
  assert.ok(snap.kind === "notebook");
  assert.deepEqual(snap.cells[0].outputs, [
    { output_type: "display_data", data: { "text/plain": "a table" }, metadata: {} },
    { output_type: "error", ename: "", evalue: "", traceback: ["ZeroDivisionError: division by zero\n"] },
  ]);
});

test("a stream that grows past its bound keeps its latest part and says how many lines went", () => {
  const { feed: f, told, emit } = feed();
  emit({ type: "cell-started", cellRun: 1, key, code: "spam()" });
  const line = `${"x".repeat(99)}\n`;
  for (let i = 0; i < 120; i++) emit(out(1, { kind: "stream", name: "stdout", text: line.repeat(100) }));
  const [snap] = f.notebooks();
  assert.ok(snap.kind === "notebook");
  const first = (snap.cells[0].outputs ?? [])[0];
  assert.ok(first?.output_type === "stream");
  const text = String(first.text);
  assert.ok(text.length <= 1024 * 1024 + 200, `${text.length}`);
  const m =
    /^\[… (\d+) earlier lines not shown here: the notebook file or the call's result has them …\]\n/.exec(
      text,
    );
  assert.ok(m, text.slice(0, 120));
  // Every line is either counted or still there.
  assert.equal(Number(m[1]) + text.slice(m[0].length).split("\n").length - 1, 12_000);
  assert.ok(told.some((x) => x.kind === "output-replaced"));
});

test("a cell that started before the file's first read is shown running with no outputs, not with the old ones", async () => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-feed-"));
  const file = join(await realpath(dir), "nb.ipynb");
  const cell = { id: "c1", cell_type: "code", source: "work()", metadata: {}, execution_count: 3 };
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [{ ...cell, outputs: [{ output_type: "stream", name: "stdout", text: "old\n" }] }],
  };
  await writeFile(file, JSON.stringify(nb));
  const told: ViewMessage[] = [];
  let shown: (() => void) | undefined;
  const f = new NotebookFeed({
    tell: (m) => {
      told.push(m);
      if (m.kind === "notebook") shown?.();
    },
    act: async () => undefined,
  });
  try {
    f.hostSnapshot("h1", [], [], []);
    const nbKey = { kind: "notebook" as const, path: file };
    // All of this comes before the read the first event starts has finished.
    f.event("h1", {
      type: "cell-started",
      cellRun: 1,
      key: nbKey,
      code: "work()",
      cellId: "c1",
      seq: 1,
      at: 0,
    });
    await new Promise<void>((resolve) => {
      shown = resolve;
    });
    assert.deepEqual(told, [
      {
        kind: "notebook",
        path: file,
        cells: [{ id: "c1", cell_type: "code", source: "work()", outputs: [], execution_count: 3 }],
        language: "python",
        title: "nb.ipynb",
      },
      { kind: "cell-running", path: file, id: "c1", state: "running" },
    ]);
  } finally {
    f.close();
  }
});

test("the notebooks' snapshots say which cells run now, for a page that connects while they run", () => {
  const { feed: f, emit } = feed();
  emit({ type: "cell-started", cellRun: 1, key, code: "work()" });
  const [running] = f.notebooks();
  assert.ok(running.kind === "notebook");
  assert.deepEqual(running.running, ["cell-1"]);
  emit({ type: "cell-ended", cellRun: 1, status: "ok", executionCount: 1 });
  const [done] = f.notebooks();
  assert.ok(done.kind === "notebook");
  assert.equal(done.running, undefined);
});

test("a hub that connects while a cell runs marks it from the host's snapshot, and its events go on from there", () => {
  const told: ViewMessage[] = [];
  const f = new NotebookFeed({ tell: (m) => told.push(m), act: async () => undefined });
  const call = { callId: "c1", tool: "python", params: {}, startedAt: 0 };
  const cell = { cellRun: 7, key, code: "work()", startedAt: 0, callId: "c1", tail: "so far\n" };
  const ended = { ...cell, cellRun: 6, code: "setup()", endedAt: 0, status: "ok" as const };
  f.hostSnapshot("h1", [], [call], [], [ended, cell]);
  const [snap] = f.notebooks();
  assert.ok(snap.kind === "notebook");
  assert.deepEqual(
    snap.cells.map((c) => [c.id, c.source]),
    [["cell-1", "work()"]],
    "the running cell only: the ended one comes with the session's export",
  );
  assert.deepEqual(snap.running, ["cell-1"]);
  // Its output and end, as events, land on that cell.
  f.event("h1", {
    type: "cell-output",
    cellRun: 7,
    output: { kind: "stream", name: "stdout", text: "more\n", skippedLines: 0 },
    seq: 1,
    at: 0,
  });
  f.event("h1", { type: "cell-ended", cellRun: 7, status: "ok", executionCount: 2, seq: 2, at: 0 });
  const [after] = f.notebooks();
  assert.ok(after.kind === "notebook");
  assert.equal(after.running, undefined);
  assert.deepEqual(after.cells[0].outputs, [{ output_type: "stream", name: "stdout", text: "more\n" }]);
  assert.equal(after.cells[0].execution_count, 2);
  // A second snapshot (events dropped) that still lists it running keeps it so, not marked twice.
  f.hostSnapshot("h1", [], [call], [], [{ ...cell, cellRun: 8 }]);
  f.hostSnapshot("h1", [], [call], [], [{ ...cell, cellRun: 8 }]);
  const [again] = f.notebooks();
  assert.ok(again.kind === "notebook");
  assert.deepEqual(again.running, ["cell-2"]);
  assert.equal(again.cells.length, 2);
  // One that no longer lists it: it went idle meanwhile.
  f.hostSnapshot("h1", [], [call], [], []);
  const [last] = f.notebooks();
  assert.ok(last.kind === "notebook");
  assert.equal(last.running, undefined);
  f.close();
});

test("a run's plan marks its cells waiting until each starts; its end, or its host's, clears the rest", async () => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-feed-"));
  const file = join(await realpath(dir), "plan.ipynb");
  const code = (id: string) => ({
    id,
    cell_type: "code",
    source: `${id}()`,
    metadata: {},
    execution_count: null,
    outputs: [],
  });
  await writeFile(
    file,
    JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: ["a", "b", "c"].map(code) }),
  );
  let shown: (() => void) | undefined;
  const f = new NotebookFeed({ tell: (m) => m.kind === "notebook" && shown?.(), act: async () => undefined });
  const states = () => {
    const [nb] = f.notebooks();
    assert.ok(nb.kind === "notebook");
    return { running: nb.running ?? [], queued: nb.queued ?? [] };
  };
  const nbKey = { kind: "notebook" as const, path: file };
  let seq = 0;
  const emit = (host: string, e: RuntimeEvent) => f.event(host, { ...e, seq: ++seq, at: 0 } as StampedEvent);
  try {
    f.hostSnapshot("h1", [], [], []);
    f.hostSnapshot("h2", [], [], []);
    // The plan comes before the file's first read: the page gets the marks with the notebook.
    emit("h1", { type: "cells-queued", path: file, cellIds: ["a", "b", "c"] });
    await new Promise<void>((resolve) => {
      shown = resolve;
    });
    assert.deepEqual(states(), { running: [], queued: ["a", "b", "c"] });
    emit("h1", { type: "cell-started", cellRun: 1, key: nbKey, code: "a()", cellId: "a" });
    assert.deepEqual(states(), { running: ["a"], queued: ["b", "c"] });
    emit("h1", { type: "cell-ended", cellRun: 1, status: "error", executionCount: 1 });
    // The run stopped at its error: its end takes b and c off the list.
    emit("h1", { type: "cells-queued", path: file, cellIds: [] });
    assert.deepEqual(states(), { running: [], queued: [] });
    // Another host's plan is its own; that host going away clears it.
    emit("h2", { type: "cells-queued", path: file, cellIds: ["c"] });
    emit("h1", { type: "cells-queued", path: file, cellIds: [] });
    assert.deepEqual(states(), { running: [], queued: ["c"] });
    f.hostRemoved("h2");
    f.hostSnapshot("h1", [], [], []);
    assert.deepEqual(states(), { running: [], queued: [] });
  } finally {
    f.close();
  }
});

test("a hub that comes after a host touched notebooks lists them from the host's snapshot", async () => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-feed-"));
  const file = join(await realpath(dir), "earlier.ipynb");
  const cell = { id: "e", cell_type: "code", source: "1", metadata: {}, execution_count: 1, outputs: [] };
  await writeFile(file, JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [cell] }));
  let shown: (() => void) | undefined;
  const f = new NotebookFeed({ tell: (m) => m.kind === "notebook" && shown?.(), act: async () => undefined });
  try {
    const read = new Promise<void>((resolve) => {
      shown = resolve;
    });
    f.hostSnapshot("h1", [], [], [], [], [file]);
    await read;
    assert.deepEqual(
      f.notebooks().map((m) => m.kind === "notebook" && m.path),
      [file],
    );
  } finally {
    f.close();
  }
});
