/**
 * The agent flow end to end through the CLI (`nbagent batch`: JSON-lines tool calls in one process,
 * so they share the notebook's kernel): insert/edit with execute:true, python with notebook_path,
 * errors, allow_errors, tags, ranges, update_display_data across run calls, and bad input.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";
import { batch, type Json, readNb, resultText, tempDir, validate, writeNb } from "./helpers.js";

const nbCall = (params: Record<string, unknown>) => ({ tool: "notebook", params });
const pyCall = (code: string, notebook_path: string) => ({
  tool: "python",
  params: { cells: [{ code }], notebook_path },
});
const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const joined = (v: unknown) => (Array.isArray(v) ? v.join("") : String(v));

describe("agent flow through nbagent batch", { concurrency: true }, () => {
  let dir: string;
  before(async () => {
    dir = await tempDir();
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("insert/edit with execute, python inspection, errors, allow_errors, ranges", async () => {
    const path = await writeNb(join(dir, "flow.ipynb"), [
      ["markdown", "# Title\n\nSome *text*."],
      ["code", "base = 40"],
      ["raw", "raw stays"],
    ]);
    const rel = "flow.ipynb";
    const hashCode =
      "import hashlib; print('sha', hashlib.sha256(open('flow.ipynb','rb').read()).hexdigest())";
    const { results: r, stderr } = await batch(dir, [
      /* 0 */ nbCall({ action: "run", notebook_path: rel, cell_index: 1 }),
      /* 1 */ nbCall({
        action: "insert",
        notebook_path: rel,
        cell_index: 2,
        content: "y = base + 2\nprint('y is', y)",
        execute: true,
      }),
      /* 2 */ nbCall({
        action: "edit",
        notebook_path: rel,
        cell_index: 2,
        content: "y = base + 3\nprint('y now', y)",
        execute: true,
      }),
      /* 3 */ nbCall({
        action: "insert",
        notebook_path: rel,
        cell_index: 3,
        content: "raise ValueError('boom ' + str(y))",
        execute: true,
      }),
      /* 4 */ nbCall({
        action: "insert",
        notebook_path: rel,
        cell_index: 4,
        content: "after = 'ran'\nprint(after)",
      }),
      /* 5 */ nbCall({ action: "run", notebook_path: rel }),
      /* 6 */ nbCall({ action: "run", notebook_path: rel, cell_index: 1, to_index: 2 }),
      /* 7 */ nbCall({ action: "run", notebook_path: rel, allow_errors: true }),
      /* 8 */ pyCall(hashCode, rel),
      /* 9 */ pyCall("print('inspect', y * 2, after)\nbase = -1", rel),
      /* 10 */ pyCall(hashCode, rel),
    ]);
    assert.equal(r.length, 11, stderr);

    // 0: one cell ran; 1: the inserted cell ran with its output in the result
    assert.equal(r[0].isError, false, resultText(r[0]));
    assert.deepEqual(
      r[0].details.ranCells.map((c: Json) => [c.index, c.status, c.executionCount]),
      [[1, "ok", 1]],
    );
    assert.equal(r[1].isError, false, resultText(r[1]));
    assert.match(resultText(r[1]), /y is 42/);
    assert.equal(r[1].details.run.ranCells[0].executionCount, 2);
    const insertedId = r[1].details.cellId;
    assert.deepEqual(r[1].details.run.updatedCellIds, [insertedId]);
    // 2: edited and re-run: new output, count advanced
    assert.match(resultText(r[2]), /y now 43/);
    assert.doesNotMatch(resultText(r[2]), /y is 42/);
    assert.equal(r[2].details.run.ranCells[0].executionCount, 3);
    // 3: the error is reported with its traceback
    assert.equal(r[3].isError, true);
    assert.match(resultText(r[3]), /ValueError/);
    assert.match(resultText(r[3]), /boom 43/);
    assert.match(resultText(r[3]), /Traceback|-{20}/);
    // 5: run all stops at the error; the cell after it is not run
    assert.equal(r[5].isError, true);
    const statuses5 = r[5].details.ranCells.map((c: Json) => [c.index, c.status]);
    assert.deepEqual(statuses5, [
      [0, "skipped"],
      [1, "ok"],
      [2, "ok"],
      [3, "error"],
      [4, "not-run"],
      [5, "not-run"],
    ]);
    // 6: a range runs exactly those cells
    assert.equal(r[6].isError, false, resultText(r[6]));
    assert.deepEqual(
      r[6].details.ranCells.map((c: Json) => c.index),
      [1, 2],
    );
    // 7: allow_errors goes on past the error
    const statuses7 = Object.fromEntries(r[7].details.ranCells.map((c: Json) => [c.index, c.status]));
    assert.equal(statuses7[3], "error");
    assert.equal(statuses7[4], "ok");
    assert.match(resultText(r[7]), /ran/);
    // 8–10: python in the notebook's kernel sees its variables; the file is not touched by it
    assert.match(resultText(r[9]), /inspect 86 ran/);
    const before = /sha ([0-9a-f]{64})/.exec(resultText(r[8]))?.[1];
    const afterHash = /sha ([0-9a-f]{64})/.exec(resultText(r[10]))?.[1];
    assert.ok(before, resultText(r[8]));
    assert.equal(afterHash, before);
    const bytes = await readFile(path);
    assert.equal(sha(bytes), before, "python with notebook_path changed the file");

    // The file: valid, outputs replaced, counts as the last run left them, error recorded.
    assert.equal(await validate(path), "ok");
    const nb = await readNb(path);
    const cells = nb.cells;
    assert.equal(cells.length, 6);
    assert.equal(cells[2].id, insertedId);
    assert.deepEqual(
      cells.map((c: Json) => c.execution_count),
      [undefined, 10, 11, 12, 13, undefined],
    );
    assert.deepEqual(cells[2].outputs, [{ name: "stdout", output_type: "stream", text: ["y now 43\n"] }]);
    const err = cells[3].outputs;
    assert.equal(err.length, 1);
    assert.equal(err[0].output_type, "error");
    assert.equal(err[0].ename, "ValueError");
    assert.equal(err[0].evalue, "boom 43");
    assert.ok(err[0].traceback.length >= 2 && joined(err[0].traceback).includes("boom"));
    assert.deepEqual(cells[4].outputs, [{ name: "stdout", output_type: "stream", text: ["ran\n"] }]);
    assert.equal(joined(cells[0].source), "# Title\n\nSome *text*.");
    assert.equal(joined(cells[5].source), "raw stays");
  });

  it("skip-execution and raises-exception tags; update_display_data from a later run call", async () => {
    const path = await writeNb(join(dir, "tags.ipynb"), [
      ["code", "print('never')", ["skip-execution"]],
      ["code", "raise RuntimeError('expected')", ["raises-exception"]],
      ["code", "h = display('v1', display_id='d1')\nprint('after')"],
      ["code", "h.update('v2')"],
      ["code", "h.update('v3')\nprint('same run')"],
    ]);
    const rel = "tags.ipynb";
    const { results: r } = await batch(dir, [
      nbCall({ action: "run", notebook_path: rel, cell_index: 0, to_index: 2 }),
      nbCall({ action: "run", notebook_path: rel, cell_index: 3 }),
    ]);
    const statuses = r[0].details.ranCells.map((c: Json) => [c.index, c.status]);
    assert.deepEqual(statuses, [
      [0, "skipped"],
      [1, "error"],
      [2, "ok"],
    ]);
    assert.match(resultText(r[0]), /after/);
    assert.equal(r[0].isError, false, "an expected (raises-exception) error is not a failed call");
    assert.equal(r[0].details.ranCells[1].expectedError, true);
    assert.equal(r[1].isError, false, resultText(r[1]));

    const nb = await readNb(path);
    assert.deepEqual(nb.cells[0].outputs, []);
    assert.equal(nb.cells[0].execution_count, null);
    assert.equal(nb.cells[1].outputs[0].ename, "RuntimeError");
    const display = nb.cells[2].outputs.find((o: Json) => o.output_type === "display_data");
    assert.deepEqual(display.data, { "text/plain": ["'v2'"] }, "updated by the later run call");
    assert.equal(display.transient, undefined);
    assert.deepEqual(nb.cells[3].outputs, []);
    assert.deepEqual(nb.cells[4].outputs, [], "cell 4 never ran");
    assert.equal(await validate(path), "ok");
  });

  it("tags set through the tool: run skips a skip-execution cell; a raw cell inserted stays", async () => {
    const path = await writeNb(join(dir, "settags.ipynb"), [
      ["code", "print('skipped?')"],
      ["code", "print('ran')"],
    ]);
    const rel = "settags.ipynb";
    const { results: r } = await batch(dir, [
      nbCall({ action: "tags", notebook_path: rel, cell_index: 0, add: ["skip-execution", "slow"] }),
      nbCall({ action: "tags", notebook_path: rel, cell_id: "c0", remove: ["slow"] }),
      nbCall({ action: "insert", notebook_path: rel, cell_index: 2, content: "raw text", cell_type: "raw" }),
      nbCall({ action: "tags", notebook_path: rel, cell_index: 0, add: ["x", "x"] }),
      nbCall({ action: "run", notebook_path: rel }),
    ]);
    assert.equal(
      resultText(r[0]),
      "Tags of cell 0 (id c0): skip-execution, slow (added skip-execution, slow).",
    );
    assert.equal(resultText(r[1]), "Tags of cell 0 (id c0): skip-execution (removed slow).");
    assert.match(
      resultText(r[2]),
      /^Inserted raw cell at position 2 \(id [0-9a-f]{8}\)\. Notebook now has 3 cells\.$/,
    );
    assert.equal(resultText(r[3]), 'Error: add lists "x" twice; give each tag once.');
    assert.equal(r[3].isError, true);
    const statuses = r[4].details.ranCells.map((c: Json) => [c.index, c.status]);
    assert.deepEqual(statuses, [
      [0, "skipped"],
      [1, "ok"],
      [2, "skipped"],
    ]);
    assert.doesNotMatch(resultText(r[4]), /skipped\?/);
    assert.match(resultText(r[4]), /ran/);
    const nb = await readNb(path);
    assert.deepEqual(nb.cells[0].metadata.tags, ["skip-execution"]);
    assert.deepEqual(nb.cells[0].outputs, []);
    assert.equal(nb.cells[2].cell_type, "raw");
    assert.equal(await validate(path), "ok");
  });

  it("the schema the model sees offers run's allow_errors, timeout and the to_index range", () => {
    const tool = createNotebookTool({
      cwd: dir,
      executor: { run: async () => ({ content: [], details: {} }) },
    });
    const props = (tool.parameters as Json).properties;
    assert.equal(props.allow_errors.type, "boolean");
    assert.equal(props.timeout.type, "number");
    assert.match(props.to_index.description, /run/);
  });

  it("bad input answers with clear text and leaves the file byte-identical", async () => {
    const path = await writeNb(join(dir, "bad.ipynb"), [
      ["markdown", "only *markdown* here"],
      ["raw", "and raw"],
      ["code", "   \n"],
      ["code", "print('x')"],
    ]);
    const rel = "bad.ipynb";
    const before = await readFile(path);
    const { results: r, code } = await batch(dir, [
      nbCall({ action: "run", notebook_path: rel, cell_index: 0, to_index: 2 }),
      nbCall({ action: "run", notebook_path: rel, cell_index: 9 }),
      nbCall({ action: "run", notebook_path: rel, cell_index: 3, to_index: 1 }),
      nbCall({ action: "run", notebook_path: rel, cell_index: 1, to_index: 7 }),
      nbCall({ action: "run", notebook_path: rel, cell_id: "nope" }),
      nbCall({ action: "run", notebook_path: "missing.ipynb" }),
      nbCall({ action: "edit", notebook_path: rel, cell_index: 8, content: "1", execute: true }),
      pyCall("1", "missing.ipynb"),
    ]);
    assert.equal(code, 1);
    assert.equal(r[0].isError, false);
    assert.match(resultText(r[0]), /No code cells to run/);
    assert.deepEqual(
      r[0].details.ranCells.map((c: Json) => c.status),
      ["skipped", "skipped", "skipped"],
    );
    for (const [i, re] of [
      [1, /out of range/],
      [2, /to_index 1 out of range/],
      [3, /to_index 7 out of range/],
      [4, /No cell with id "nope"/],
      [5, /missing\.ipynb/],
      [6, /out of range/],
      [7, /missing\.ipynb/],
    ] as const) {
      assert.equal(r[i].isError, true, `call ${i}`);
      assert.match(resultText(r[i]), /^Error: /, `call ${i}`);
      assert.match(resultText(r[i]), re, `call ${i}`);
    }
    assert.ok((await readFile(path)).equals(before), "file changed by rejected calls");
  });
});
