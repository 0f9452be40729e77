/**
 * The view's notebook model and message checks (src/view/notebook-model.ts, src/view/protocol.ts),
 * without a browser: what a message changes, what it is refused for, and how streams are joined
 * and settled. The page (test/view/page.test.ts) draws from exactly this model.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NotebookModel, settleStreamText } from "../../src/view/notebook-model.js";
import { checkViewMessage, type ViewCell } from "../../src/view/protocol.js";

const path = "n.ipynb";
const code = (id: string): ViewCell => ({ id, cell_type: "code", source: ["x = 1\n", "y = 2"], outputs: [] });

function model(...ids: string[]): NotebookModel {
  const m = new NotebookModel(path);
  m.apply({ kind: "notebook", path, cells: ids.map(code) });
  return m;
}

test("each patch says what it changed, and the cells are where the message put them", () => {
  const m = model("a", "b", "c");
  assert.equal(m.cells[0].source, "x = 1\ny = 2");
  assert.deepEqual(m.apply({ kind: "cell-inserted", path, index: 3, cell: code("d") }), {
    kind: "inserted",
    index: 3,
  });
  assert.deepEqual(m.apply({ kind: "cell-moved", path, id: "d", to: 0 }), { kind: "moved", from: 3, to: 0 });
  assert.deepEqual(m.apply({ kind: "cell-deleted", path, id: "b" }), { kind: "deleted", index: 2 });
  assert.deepEqual(m.apply({ kind: "cell-edited", path, id: "c", source: "z", cell_type: "markdown" }), {
    kind: "changed",
    index: 2,
  });
  assert.deepEqual(
    m.cells.map((c) => [c.id, c.cell_type, c.source, c.version]),
    [
      ["d", "code", "x = 1\ny = 2", 0],
      ["a", "code", "x = 1\ny = 2", 0],
      ["c", "markdown", "z", 1],
    ],
  );
});

test("a patch the model cannot apply is refused with the reason and changes nothing", () => {
  const m = model("a", "b");
  const before = JSON.stringify(m.cells);
  assert.deepEqual(m.apply({ kind: "cell-deleted", path, id: "zz" }), {
    kind: "rejected",
    reason: "no cell zz",
  });
  assert.deepEqual(m.apply({ kind: "cell-inserted", path, index: 5, cell: code("c") }), {
    kind: "rejected",
    reason: "index 5 is past the end (2)",
  });
  assert.deepEqual(m.apply({ kind: "cell-inserted", path, index: 0, cell: code("a") }), {
    kind: "rejected",
    reason: "cell a is already there",
  });
  assert.deepEqual(m.apply({ kind: "cell-moved", path, id: "a", to: 2 }), {
    kind: "rejected",
    reason: "position 2 is past the end",
  });
  assert.deepEqual(m.apply({ kind: "output-replaced", path, id: "a", index: 0, output: stream("x") }), {
    kind: "rejected",
    reason: "cell a has no output 0",
  });
  assert.deepEqual(m.apply({ kind: "cell-deleted", path: "other.ipynb", id: "a" }), {
    kind: "rejected",
    reason: "message for other.ipynb",
  });
  assert.equal(JSON.stringify(m.cells), before);
});

const stream = (text: string, name: "stdout" | "stderr" = "stdout") =>
  ({ output_type: "stream", name, text }) as const;

test("stream chunks join into one output per stream; clear_output(wait) clears at the next output", () => {
  const m = model("a");
  for (const out of [stream("1\n"), stream("2\n"), stream("oops\n", "stderr"), stream("3\n")])
    m.apply({ kind: "output-appended", path, id: "a", output: out });
  assert.deepEqual(
    m.cells[0].outputs.map((o) => (o.output_type === "stream" ? [o.name, o.text] : o.output_type)),
    [
      ["stdout", "1\n2\n"],
      ["stderr", "oops\n"],
      ["stdout", "3\n"],
    ],
  );
  m.apply({ kind: "outputs-cleared", path, id: "a", wait: true });
  assert.equal(m.cells[0].outputs.length, 3);
  m.apply({ kind: "output-appended", path, id: "a", output: stream("fresh\n") });
  assert.deepEqual(m.cells[0].outputs, [stream("fresh\n")]);
  // update_display_data replaces that output, and only it
  const png = { output_type: "display_data", data: { "image/png": "iVBORw0KGgo=" }, metadata: {} } as const;
  assert.deepEqual(m.apply({ kind: "output-replaced", path, id: "a", index: 0, output: png }), {
    kind: "changed",
    index: 0,
  });
  assert.deepEqual(m.cells[0].outputs, [png]);
  m.apply({ kind: "cell-running", path, id: "a", state: "idle", execution_count: 4 });
  assert.equal(m.cells[0].execution_count, 4);
});

test("a stream's \\r and \\b settle as a terminal leaves them (progress bars)", () => {
  assert.equal(settleStreamText("10%\r50%\r100%\ndone\n"), "100%\ndone\n");
  assert.equal(settleStreamText("abc\b\bX\n"), "aXc\n");
  assert.equal(settleStreamText("a\r\nb"), "a\nb");
});

test("checkViewMessage says what is wrong with a message off the wire", () => {
  assert.deepEqual(checkViewMessage({ kind: "cell-deleted", path }), { error: "cell-deleted has no id" });
  assert.deepEqual(checkViewMessage({ kind: "hello", path }), { error: 'unknown message kind "hello"' });
  assert.deepEqual(checkViewMessage([]), { error: "a message must be a JSON object" });
  assert.deepEqual(checkViewMessage({ kind: "notebook", path, cells: [{ cell_type: "code", source: "" }] }), {
    error: "notebook: cells[0] has no id",
  });
  assert.deepEqual(checkViewMessage({ kind: "cell-moved", path, id: "a", to: -1 }), {
    error: "cell-moved: to must be a whole number ≥ 0",
  });
  assert.deepEqual(
    checkViewMessage({ kind: "output-appended", path, id: "a", output: { output_type: "bogus" } }),
    { error: "output-appended: output is not an nbformat output" },
  );
  assert.deepEqual(checkViewMessage({ kind: "notebook", path, cells: [], running: "a" }), {
    error: "notebook: running must be a list of cell ids",
  });
  const ok = { kind: "cell-running", path, id: "a", state: "running" };
  assert.deepEqual(checkViewMessage(ok), { message: ok });
});

test("a snapshot says which cells run now and which wait: a page that comes late marks them at once", () => {
  const m = new NotebookModel(path);
  const cell = (id: string) => ({ id, cell_type: "code" as const, source: id, outputs: [] });
  m.apply({
    kind: "notebook",
    path,
    cells: [cell("a"), cell("b"), cell("c")],
    running: ["b", "gone"],
    queued: ["c"],
  });
  assert.deepEqual(
    m.cells.map((c) => c.state),
    ["idle", "running", "queued"],
  );
  // A snapshot without them: every cell idle.
  m.apply({ kind: "notebook", path, cells: [cell("a"), cell("b")] });
  assert.deepEqual(
    m.cells.map((c) => c.state),
    ["idle", "idle"],
  );
});
