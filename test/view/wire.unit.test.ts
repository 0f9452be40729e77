/**
 * The calls and cells a host keeps for a viewer that connects later (src/view/wire.ts noteCall,
 * noteCell; docs/view.md "Across processes"): each cell with the call it ran for — the same one a
 * page that saw it start matches — its end and the end of what it printed, within their bounds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RuntimeEvent, StampedEvent } from "../../src/runtime/events.js";
import {
  CELL_TAIL_CHARS,
  noteCall,
  noteCell,
  noteNotebook,
  RECENT_CELL_CHARS,
  RECENT_CELLS,
  RECENT_NOTEBOOKS,
  type WireCall,
  type WireCell,
} from "../../src/view/wire.js";

const py = { kind: "python" as const, sessionId: "default", cwd: "/w" };
const nb = { kind: "notebook" as const, path: "/w/a.ipynb" };

function log(limit = 50) {
  const calls: WireCall[] = [];
  const cells: WireCell[] = [];
  let seq = 0;
  const note = (e: RuntimeEvent) => {
    const stamped = { ...e, seq: ++seq, at: 1000 + seq } as StampedEvent;
    noteCall(calls, stamped, limit);
    noteCell(cells, calls, stamped);
  };
  return { calls, cells, note };
}

test("each cell keeps its call, its end and the end of what it printed", () => {
  const { cells, note } = log();
  note({ type: "call-started", callId: "p", tool: "python", params: {} });
  note({ type: "call-started", callId: "n", tool: "notebook", params: {} });
  note({ type: "cell-started", cellRun: 1, key: py, code: "print('hi')" });
  note({ type: "cell-started", cellRun: 2, key: nb, code: "x", cellId: "c-1" });
  note({ type: "cell-started", cellRun: 3, key: { kind: "per-call", of: py }, code: "y" });
  note({
    type: "cell-output",
    cellRun: 1,
    output: { kind: "stream", name: "stdout", text: "hi\n", skippedLines: 0 },
  });
  note({ type: "cell-output", cellRun: 1, output: { kind: "clear", wait: false } });
  note({
    type: "cell-output",
    cellRun: 1,
    output: { kind: "error", text: "NameError: x\n", ename: "NameError", evalue: "x", traceback: [] },
  });
  note({ type: "cell-ended", cellRun: 1, status: "error", executionCount: 1 });
  assert.deepEqual(
    cells.map((c) => [c.cellRun, c.callId, c.cellId, c.status, c.tail]),
    [
      [1, "p", undefined, "error", "hi\nNameError: x\n"],
      [2, "n", "c-1", undefined, ""],
      [3, "p", undefined, undefined, ""],
    ],
  );
  assert.deepEqual([cells[0].startedAt, cells[0].endedAt], [1003, 1009]);
  // The tail is the end of what it printed.
  note({
    type: "cell-output",
    cellRun: 2,
    output: { kind: "stream", name: "stdout", text: `${"a".repeat(5000)}z`, skippedLines: 0 },
  });
  assert.equal(cells[1].tail.length, CELL_TAIL_CHARS);
  assert.ok(cells[1].tail.endsWith("az"));
});

test("the cells are bounded: in number, in characters, and to the calls still kept", () => {
  const { calls, cells, note } = log(3);
  note({ type: "call-started", callId: "c0", tool: "python", params: {} });
  for (let i = 0; i < RECENT_CELLS + 5; i++) note({ type: "cell-started", cellRun: i, key: py, code: "x" });
  assert.equal(cells.length, RECENT_CELLS);
  assert.equal(cells[0].cellRun, 5, "the oldest went");
  // Large cells: the newest that fit in the characters' bound stay (the newest always does).
  const big = "x".repeat(RECENT_CELL_CHARS / 4);
  for (let i = 0; i < 5; i++) note({ type: "cell-started", cellRun: 1000 + i, key: py, code: big });
  const chars = cells.reduce((n, c) => n + c.code.length + c.tail.length, 0);
  assert.ok(chars <= RECENT_CELL_CHARS, `${chars}`);
  assert.equal(cells.at(-1)?.cellRun, 1004);
  // A call that is no longer kept takes its cells with it (at the next cell).
  note({
    type: "call-ended",
    callId: "c0",
    tool: "python",
    durationMs: 1,
    texts: [],
    images: 0,
    isError: false,
  });
  for (const id of ["c1", "c2", "c3"]) note({ type: "call-started", callId: id, tool: "python", params: {} });
  assert.deepEqual(
    calls.map((c) => c.callId),
    ["c1", "c2", "c3"],
  );
  note({ type: "cell-started", cellRun: 2000, key: py, code: "z" });
  assert.deepEqual(
    cells.map((c) => [c.cellRun, c.callId]),
    [[2000, "c3"]],
  );
});

test("what the cells printed counts toward the characters' bound, as their code does", () => {
  const { cells, note } = log(3);
  const print = (cellRun: number, text: string) =>
    note({ type: "cell-output", cellRun, output: { kind: "stream", name: "stdout", text, skippedLines: 0 } });
  note({ type: "call-started", callId: "c0", tool: "python", params: {} });
  const code = "y".repeat(RECENT_CELL_CHARS / 2 - CELL_TAIL_CHARS);
  note({ type: "cell-started", cellRun: 1, key: py, code });
  print(1, "t".repeat(CELL_TAIL_CHARS));
  note({ type: "cell-started", cellRun: 2, key: py, code });
  print(2, "t".repeat(CELL_TAIL_CHARS - 1));
  note({ type: "cell-started", cellRun: 3, key: py, code: "z" });
  assert.deepEqual(
    cells.map((c) => c.cellRun),
    [1, 2, 3],
    "exactly the bound: all stay",
  );
  print(2, "tt"); // the tail keeps its last CELL_TAIL_CHARS: one more character in all
  note({ type: "cell-started", cellRun: 4, key: py, code: "" });
  assert.deepEqual(
    cells.map((c) => c.cellRun),
    [2, 3, 4],
    "one character past it: the oldest goes",
  );
});

test("the notebooks a host touched: latest last, each once, bounded, from the events that name a file", () => {
  const paths: string[] = [];
  let seq = 0;
  const note = (e: RuntimeEvent) => noteNotebook(paths, { ...e, seq: ++seq, at: 0 } as StampedEvent);
  note({ type: "notebook-opened", path: "/a.ipynb" });
  note({ type: "notebook-saved", path: "/b.ipynb", cellIds: [] });
  note({ type: "cells-queued", path: "/a.ipynb", cellIds: ["x"] });
  note({ type: "cell-started", cellRun: 1, key: { kind: "notebook", path: "/c.ipynb" }, code: "1" });
  note({ type: "cell-started", cellRun: 2, key: { kind: "python", sessionId: "s", cwd: "/" }, code: "1" });
  assert.deepEqual(paths, ["/b.ipynb", "/a.ipynb", "/c.ipynb"]);
  for (let i = 0; i < RECENT_NOTEBOOKS + 5; i++) note({ type: "notebook-opened", path: `/n${i}.ipynb` });
  assert.equal(paths.length, RECENT_NOTEBOOKS);
  assert.equal(paths.at(-1), `/n${RECENT_NOTEBOOKS + 4}.ipynb`);
});
