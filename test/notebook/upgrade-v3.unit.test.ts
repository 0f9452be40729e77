/**
 * nbformat 3 notebooks are upgraded on read as nbformat does (docs/notebook-tool.md, "nbformat 3
 * notebooks"): Python's `nbformat.read(path, as_version=4)` + `nbformat.writes` is the oracle for
 * the upgrade; `read` writes nothing, a change saves the file as 4.5, and the text says which.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { loadNotebook, type Notebook, parseJson, serializeNotebook } from "../../src/notebook/index.js";
import { call, Oracle, PYTHON, readJson, tempDir, text } from "./helpers.js";

const run = promisify(execFile);
let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

/** Writes v3 notebooks with nbformat's own v3 writer into `dir`; returns their names. */
const MAKE_V3 = String.raw`
import sys, os, json, nbformat
from nbformat import v3
d = sys.argv[1]
nb = v3.new_notebook(name="demo", metadata=v3.new_metadata(name="demo"))
ws = v3.new_worksheet()
ws.cells.append(v3.new_heading_cell("Title\nsecond line", level=2))
ws.cells.append(v3.new_heading_cell("Plain"))
ws.cells.append(v3.new_text_cell("markdown", source="Some *text*\nmore"))
ws.cells.append(v3.new_code_cell(input="x = 1\nprint(x)", prompt_number=1, outputs=[
  v3.new_output("stream", output_text="1\n2\n", stream="stderr"),
  v3.new_output("pyout", output_text="1", output_html="<b>1</b>\n<i>x</i>", prompt_number=1),
  v3.new_output("display_data", output_png="iVBORw0KGgo=\nAAAA", output_text="<Figure>",
                output_json='{"a": [1, 2.5]}', output_svg="<svg>\n</svg>", output_latex="$x$",
                output_javascript="alert(1)\nalert(2)", metadata={"png": {"width": 10}}),
  v3.new_output("pyerr", ename="ValueError", evalue="bad", traceback=["tb1", "tb2"]),
], collapsed=True))
ws.cells.append(v3.new_code_cell(input="", prompt_number=None))
ws.cells.append(v3.new_text_cell("raw", source="raw text"))
nb.worksheets.append(ws)
ws2 = v3.new_worksheet()
ws2.cells.append(v3.new_code_cell(input="y = 2"))
nb.worksheets.append(ws2)
open(os.path.join(d, "demo.ipynb"), "w").write(nbformat.writes(nb, version=3))
# Lines as old writers split them (without line ends), a signature, unicode.
raw = {"metadata": {"name": "old", "signature": "sha256:0"}, "nbformat": 3, "nbformat_minor": 0,
       "worksheets": [{"metadata": {}, "cells": [
         {"cell_type": "code", "language": "python", "collapsed": False, "metadata": {"trusted": True},
          "input": ["a = 'é'", "b = 2"], "prompt_number": 7,
          "outputs": [{"output_type": "pyout", "prompt_number": 7, "metadata": {},
                       "text": ["'é'", "second"]}, {"output_type": "stream", "text": "x"}]},
         {"cell_type": "markdown", "metadata": {}, "source": ["# A", "b"]}]}]}
open(os.path.join(d, "old.ipynb"), "w").write(json.dumps(raw, indent=1))
`;

const ORACLE = `
import sys, nbformat
for p in sys.argv[1:]:
    nb = nbformat.read(p, as_version=4)
    open(p + ".oracle", "w").write(nbformat.writes(nb))
`;

async function v3Files(dir: string): Promise<string[]> {
  await run(PYTHON, ["-c", MAKE_V3, dir]);
  return ["demo.ipynb", "old.ipynb"].map((n) => join(dir, n));
}

describe("nbformat 3 notebooks", () => {
  test("the upgrade is nbformat's: same JSON as nbformat.read(as_version=4) written by nbformat.write", async () => {
    const dir = await tempDir();
    const files = await v3Files(dir);
    await run(PYTHON, ["-W", "ignore", "-c", ORACLE, ...files]);
    for (const file of files) {
      const loaded = await loadNotebook(file);
      assert.equal(loaded.upgradedFrom, 3);
      const ids = loaded.notebook.cells.map((c) => c.id);
      assert.ok(ids.every((id) => typeof id === "string" && /^[0-9a-f]{8}$/.test(id)));
      assert.equal(new Set(ids).size, ids.length);
      const withoutIds = { ...loaded.notebook, cells: loaded.notebook.cells.map(({ id: _, ...c }) => c) };
      // nbformat gives random ids too: compare without them, both printed by nbformat.write's rules.
      const expected = parseJson(await readFile(`${file}.oracle`, "utf8")) as Notebook;
      expected.cells = expected.cells.map(({ id: _, ...c }) => c);
      assert.equal(serializeNotebook(withoutIds), serializeNotebook(expected), file);
    }
  });

  test("ids follow each cell, not the file: another writer's change renames only the cells it changed", async () => {
    const dir = await tempDir();
    const [demo] = await v3Files(dir);
    const before = (await loadNotebook(demo)).notebook.cells.map((c) => c.id);
    // Another writer (here: a v3 save of the same notebook with one code cell changed, an output
    // dropped and a cell appended) changes the file's bytes.
    const raw = JSON.parse(await readFile(demo, "utf8"));
    const cells = raw.worksheets[0].cells;
    cells[3].input = "x = 2\nprint(x)";
    cells[3].outputs = [];
    raw.worksheets[1].cells.push({
      cell_type: "code",
      input: "z = 3",
      outputs: [],
      metadata: {},
      language: "python",
    });
    await writeFile(demo, JSON.stringify(raw, null, 1));
    const after = (await loadNotebook(demo)).notebook.cells.map((c) => c.id);
    assert.equal(after.length, before.length + 1);
    assert.deepEqual(
      after.slice(0, before.length).map((id, i) => (i === 3 ? "changed" : id)),
      before.map((id, i) => (i === 3 ? "changed" : id)),
    );
    assert.notEqual(after[3], before[3]);
    assert.equal(new Set(after).size, after.length);
  });

  test("read upgrades in memory and writes nothing; an edit saves 4.5 and says so", async () => {
    const dir = await tempDir();
    const [demo] = await v3Files(dir);
    const original = await readFile(demo, "utf8");
    const read = await call(dir, { action: "read", notebook_path: "demo.ipynb" });
    assert.equal(read.isError, undefined, text(read));
    assert.match(text(read), /## cell 0 · markdown · id [0-9a-f]{8}\n## Title second line\n/);
    assert.match(
      text(read),
      /\n\nNote: demo\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, for this call only: the file is unchanged \(a change to it saves it as 4\.5\)\.$/,
    );
    assert.equal(await readFile(demo, "utf8"), original);

    // The ids a read shows name the same cells in the next call (every load gives the same ones).
    const id = /## cell 3 · code · id ([0-9a-f]{8})/.exec(text(read))?.[1];
    assert.ok(id, text(read));
    const byId = await call(dir, { action: "read", notebook_path: "demo.ipynb", cell_id: id });
    assert.equal(byId.isError, undefined, text(byId));
    assert.match(text(byId), new RegExp(`## cell 3 · code · id ${id} · execution_count 1\n`));
    assert.equal(await readFile(demo, "utf8"), original);

    const bad = await call(dir, {
      action: "edit",
      notebook_path: "demo.ipynb",
      cell_index: 99,
      content: "x",
    });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /^Error: Cell index 99 out of range/);
    assert.equal(await readFile(demo, "utf8"), original);

    const edit = await call(dir, {
      action: "edit",
      notebook_path: "demo.ipynb",
      cell_id: id,
      content: "x = 2",
    });
    assert.equal(edit.isError, undefined, text(edit));
    assert.match(
      text(edit),
      /^Replaced cell 3 \(code, id [0-9a-f]{8}; old source "x = 1" \(2 lines\)\)\. Notebook now has 7 cells\.\n\nNote: demo\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, and saved as 4\.5\.$/,
    );
    const nb = await readJson(demo);
    assert.equal(nb.nbformat, 4);
    assert.equal(nb.nbformat_minor, 5);
    assert.deepEqual(nb.cells[3].source, ["x = 2"]);
    assert.equal(nb.cells[3].outputs[1].output_type, "execute_result");
    assert.ok((await oracle.check(demo)).valid);
    const again = await call(dir, { action: "read", notebook_path: "demo.ipynb" });
    assert.doesNotMatch(text(again), /nbformat 3/);
    assert.match(
      text(again),
      new RegExp(`## cell 3 · code · id ${id} · execution_count 1\nx = 2\n`),
      "the ids were saved",
    );
  });
});
