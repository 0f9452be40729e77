/**
 * The notebook feed's diff (src/view/notebook-diff.ts): the patches that take what the page has to
 * what the file holds — inserts, edits, moves, deletes and outputs by cell id, the fewest moves,
 * unchanged outputs left alone; cells without ids named by their content; a file cut mid-write is
 * an error, not a guess.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellsOfFile, diffCells, parseNotebook } from "../../src/view/notebook-diff.js";
import { NotebookModel } from "../../src/view/notebook-model.js";
import type { ViewCell, ViewMessage } from "../../src/view/protocol.js";

const path = "/w/n.ipynb";
const code = (id: string, source = `x = "${id}"`, outputs: ViewCell["outputs"] = []): ViewCell => ({
  id,
  cell_type: "code",
  source,
  outputs,
  execution_count: null,
});

function modelOf(cells: ViewCell[]): NotebookModel {
  const m = new NotebookModel(path);
  m.apply({ kind: "notebook", path, cells });
  return m;
}

/** Applies the diff to a model of `before` and checks it then holds `after`; returns the messages. */
function patch(before: ViewCell[], after: ViewCell[]): ViewMessage[] {
  const m = modelOf(before);
  const messages = diffCells(path, m.cells, after);
  for (const msg of messages) {
    const change = m.apply(msg);
    assert.notEqual(change.kind, "rejected", `${JSON.stringify(msg)}: ${JSON.stringify(change)}`);
  }
  const want = modelOf(after);
  assert.deepEqual(
    m.cells.map((c) => [c.id, c.cell_type, c.source, c.outputs, c.execution_count]),
    want.cells.map((c) => [c.id, c.cell_type, c.source, c.outputs, c.execution_count]),
  );
  return messages;
}

test("an insert, an edit, a delete: one message each, by id", () => {
  const a = code("a");
  const b = code("b");
  const c = code("c");
  assert.deepEqual(patch([a, b, c], [a, code("n"), b, c]), [
    { kind: "cell-inserted", path, index: 1, cell: code("n") },
  ]);
  assert.deepEqual(patch([a, b, c], [a, { ...b, source: "y = 2" }, c]), [
    { kind: "cell-edited", path, id: "b", source: "y = 2" },
  ]);
  assert.deepEqual(patch([a, b, c], [a, c]), [{ kind: "cell-deleted", path, id: "b" }]);
  assert.deepEqual(patch([a, b, c], [a, { ...b, cell_type: "markdown", source: "# B" }, c]), [
    { kind: "cell-edited", path, id: "b", source: "# B", cell_type: "markdown" },
  ]);
});

test("a moved cell is one cell-moved, wherever it goes", () => {
  const cells = ["a", "b", "c", "d", "e"].map((id) => code(id));
  const [a, b, c, d, e] = cells;
  assert.deepEqual(patch(cells, [b, c, d, e, a]), [{ kind: "cell-moved", path, id: "a", to: 4 }]);
  assert.deepEqual(patch(cells, [e, a, b, c, d]), [{ kind: "cell-moved", path, id: "e", to: 0 }]);
  assert.deepEqual(patch(cells, [a, d, b, c, e]), [{ kind: "cell-moved", path, id: "d", to: 1 }]);
});

test("any mix of changes leaves the model as the file is (random cases)", () => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 300; round++) {
    const before = Array.from({ length: rand(8) }, (_, i) => code(`c${i}`));
    let after = before
      .filter(() => rand(4) !== 0)
      .map((c) => (rand(5) === 0 ? { ...c, source: "edited" } : c));
    for (let i = after.length - 1; i > 0; i--) {
      const j = rand(i + 1);
      if (rand(3) === 0) [after[i], after[j]] = [after[j], after[i]];
    }
    for (let k = rand(3); k > 0; k--) {
      const at = rand(after.length + 1);
      after = [...after.slice(0, at), code(`new${round}-${k}`), ...after.slice(at)];
    }
    patch(before, after);
  }
});

test("outputs: more of a stream is appended, a new output appended, a changed one replaced; same ones untouched", () => {
  const out1 = { output_type: "stream" as const, name: "stdout" as const, text: "1\n" };
  const png = {
    output_type: "display_data" as const,
    data: { "image/png": "iVBOR", "text/plain": "<Figure>" },
    metadata: {},
  };
  const before = [code("a", "run()", [out1])];
  assert.deepEqual(patch(before, [code("a", "run()", [{ ...out1, text: "1\n2\n" }, png])]), [
    { kind: "output-appended", path, id: "a", output: { ...out1, text: "2\n" } },
    { kind: "output-appended", path, id: "a", output: png },
  ]);
  // Key order does not make an output different (nbformat writes keys sorted; kernels do not).
  const sorted = { ...png, data: { "text/plain": "<Figure>", "image/png": "iVBOR" } };
  assert.deepEqual(patch([code("a", "run()", [out1, png])], [code("a", "run()", [out1, sorted])]), []);
  const other = { ...png, data: { "text/plain": "<Other>" } };
  assert.deepEqual(patch([code("a", "run()", [out1, png])], [code("a", "run()", [out1, other])]), [
    { kind: "output-replaced", path, id: "a", index: 1, output: other },
  ]);
  assert.deepEqual(patch([code("a", "run()", [out1, png])], [code("a", "run()", [])]), [
    { kind: "outputs-cleared", path, id: "a" },
  ]);
  assert.deepEqual(patch([code("a")], [{ ...code("a"), execution_count: 3 }]), [
    { kind: "cell-running", path, id: "a", state: "idle", execution_count: 3 },
  ]);
});

test("a cell that runs live keeps its outputs against an older file", () => {
  const m = modelOf([code("a", "run()", [{ output_type: "stream", name: "stdout", text: "live\n" }])]);
  assert.deepEqual(diffCells(path, m.cells, [code("a", "run()", [])], new Set(["a"])), []);
});

test("cells without ids are named by their content: an edit of one reads as delete and insert", () => {
  const file = (sources: string[]) => ({
    nbformat: 4,
    nbformat_minor: 4,
    metadata: { kernelspec: { name: "python3", language: "python" } },
    cells: sources.map((s) => ({
      cell_type: "code",
      source: [s],
      metadata: {},
      outputs: [],
      execution_count: null,
    })),
  });
  const one = cellsOfFile(file(["x = 1", "y = 2", "x = 1"]));
  assert.ok("cells" in one);
  const ids = one.cells.map((c) => c.id);
  assert.match(ids[0], /^nbagent-[0-9a-f]{12}$/);
  assert.equal(ids[2], `${ids[0]}#2`);
  assert.equal(one.language, "python");
  const two = cellsOfFile(file(["x = 1", "y = 3", "x = 1"]));
  assert.ok("cells" in two);
  const messages = patch(one.cells, two.cells);
  assert.deepEqual(
    messages.map((m) => m.kind),
    ["cell-deleted", "cell-inserted"],
  );
  // The same content gives the same names: an unchanged file patches nothing.
  assert.deepEqual(
    patch(one.cells, (cellsOfFile(file(["x = 1", "y = 2", "x = 1"])) as { cells: ViewCell[] }).cells),
    [],
  );
});

test("a file cut mid-write, or not a notebook, is an error that says so (nothing guessed)", () => {
  const whole = JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [] });
  assert.deepEqual(parseNotebook(whole), { cells: [] });
  const cut = parseNotebook(whole.slice(0, 30));
  assert.ok("error" in cut);
  assert.match(cut.error, /^not valid JSON \(.*\); a writer may be midway$/);
  assert.deepEqual(parseNotebook(JSON.stringify({ nbformat: 3, worksheets: [] })), {
    error: "not an nbformat 4 notebook (nbformat 3)",
  });
  // An empty file (truncated before the new content was written) is the same case.
  assert.ok("error" in parseNotebook(""));
});

test("a huge output in a file is bounded as the events bound it", () => {
  const big = "A".repeat(3 * 2 ** 20);
  const read = cellsOfFile({
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [
      {
        id: "a",
        cell_type: "code",
        source: "plot()",
        metadata: {},
        execution_count: 1,
        outputs: [
          {
            output_type: "display_data",
            data: { "image/png": big, "text/plain": ["<Figure>"] },
            metadata: {},
          },
        ],
      },
    ],
  });
  assert.ok("cells" in read);
  assert.deepEqual(read.cells[0].outputs, [
    {
      output_type: "display_data",
      data: {
        "text/plain":
          "<Figure>\n[left out of the view: image/png (3.0 MiB); the notebook file or the call's result has it]",
      },
      metadata: {},
    },
  ]);
});
