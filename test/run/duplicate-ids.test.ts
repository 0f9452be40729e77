/**
 * A notebook whose cells share an id (invalid, but in the wild: jupyter/notebook's own
 * autoscroll.ipynb has two cells with one id). A run finds each cell by id when its turn comes, so
 * the later cells get fresh ids first, as nbformat does on read; every cell runs once, the saved
 * file validates, and the text says which ids changed (docs/notebook-tool.md, "Duplicate cell ids").
 * nbclient's run of the same file is the oracle for the outputs.
 */
import assert from "node:assert/strict";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  batch,
  type Json,
  NBCLIENT_RUN,
  nbagent,
  outputTexts,
  perTestDirs,
  python,
  readNb,
  resultText,
} from "./helpers.js";

/** Cells 0 and 1 share "shared" (as in autoscroll.ipynb), cell 3 shares "twice" with cell 2. */
function sharedIdNotebook(): string {
  const code = (id: string, source: string) => ({
    cell_type: "code",
    execution_count: null,
    id,
    metadata: {},
    outputs: [],
    source,
  });
  return `${JSON.stringify(
    {
      cells: [
        code("shared", "x = 20\nprint('first', x)"),
        code("shared", "print('second', x + 1)"),
        { cell_type: "markdown", id: "twice", metadata: {}, source: "## notes" },
        code("twice", "print('third')"),
      ],
      metadata: {
        kernelspec: { display_name: "Python 3", language: "python", name: "python3" },
      },
      nbformat: 4,
      nbformat_minor: 5,
    },
    null,
    1,
  )}\n`;
}

/**
 * nbformat.validate of the file as it is: nbformat.read and a default validate repair shared ids in
 * memory, so they would pass the file that holds them.
 */
async function strictValidate(path: string): Promise<string> {
  const code =
    "import json, sys, warnings, nbformat\n" +
    "warnings.simplefilter('ignore')\n" +
    "try:\n" +
    "    nbformat.validate(json.load(open(sys.argv[1])), repair_duplicate_cell_ids=False)\n" +
    "    print('ok')\n" +
    "except Exception as e:\n" +
    "    print(type(e).__name__, str(e)[:300])\n";
  return (await python(["-c", code, path])).trim();
}

const EXPECTED = [["first 20\n"], ["second 21\n"], [], ["third\n"]];

/** ids are unique, the first of each shared one kept, the others 8 hex digits. */
function assertRepaired(nb: Json): void {
  const ids = nb.cells.map((c: Json) => c.id);
  assert.equal(new Set(ids).size, ids.length, `ids still shared: ${ids}`);
  assert.equal(ids[0], "shared");
  assert.equal(ids[2], "twice");
  assert.match(ids[1], /^[0-9a-f]{8}$/);
  assert.match(ids[3], /^[0-9a-f]{8}$/);
}

describe("a notebook whose cells share an id", { concurrency: true }, () => {
  const dir = perTestDirs();

  it("nbagent run: every cell runs once, as nbclient runs it; the file validates; the summary names the new ids", async () => {
    const d = await dir();
    const path = join(d, "autoscroll.ipynb");
    await writeFile(path, sharedIdNotebook());
    assert.match(await strictValidate(path), /^ValidationError Non-unique cell id 'shared' detected/);
    await mkdir(join(d, "ref"));
    await copyFile(path, join(d, "ref", "copy.ipynb"));
    await python([NBCLIENT_RUN, "-o", join(d, "ref-out"), join(d, "ref", "copy.ipynb")]);
    const reference = await readNb(join(d, "ref-out", "copy.ipynb"));

    const r = await nbagent(["run", path]);
    assert.equal(r.code, 0, r.stderr);
    const nb = await readNb(path);
    assert.deepEqual(outputTexts(nb), EXPECTED);
    assert.deepEqual(outputTexts(nb), outputTexts(reference));
    assert.deepEqual(
      nb.cells.filter((c: Json) => c.cell_type === "code").map((c: Json) => c.execution_count),
      [1, 2, 3],
    );
    assert.equal(await strictValidate(path), "ok");
    assertRepaired(nb);
    const [, one, , three] = nb.cells.map((c: Json) => c.id);
    assert.match(r.stderr, /ran 3 cells in [\d.]+s, 0 failed/);
    assert.ok(
      r.stderr.includes(
        `2 cells had the id of a cell above it, which nbformat does not allow: given a fresh id as nbformat does on read, and saved before any cell ran (cell 1 "shared" → "${one}", cell 3 "twice" → "${three}")`,
      ),
      r.stderr,
    );
  });

  it("the notebook tool's run: every cell runs; the text names the new ids; a later edit by the new id works", async () => {
    const d = await dir();
    const path = join(d, "nb.ipynb");
    await writeFile(path, sharedIdNotebook());
    const { results } = await batch(d, [
      { tool: "notebook", params: { action: "run", notebook_path: "nb.ipynb" } },
    ]);
    const text = resultText(results[0]);
    const nb = await readNb(path);
    assertRepaired(nb);
    assert.deepEqual(outputTexts(nb), EXPECTED);
    assert.equal(await strictValidate(path), "ok");
    const [, one, , three] = nb.cells.map((c: Json) => c.id);
    assert.match(text, /^Ran 3 of 3 code cells selected in nb\.ipynb/);
    assert.ok(
      text.includes(
        `\n2 cells had the id of a cell above it, which nbformat does not allow: given a fresh id as nbformat does on read, and saved before any cell ran (cell 1 "shared" → "${one}", cell 3 "twice" → "${three}").\n`,
      ),
      text,
    );
    assert.match(text, /second 21/);
    // Each output is headed by the id the cell has now.
    assert.ok(text.includes(`[cell 1 (id ${one})]\nsecond 21`), text);
    assert.ok(text.includes(`[cell 3 (id ${three})]\nthird`), text);
    // The note on the invalid file says what the run changed, not "it still is".
    assert.match(
      text,
      /Note: nb\.ipynb was invalid before this call; nbformat would reject it:\n- cells 0 and 1 share id "shared"\n- cells 2 and 3 share id "twice"\nA run gives the cells that share an id fresh ids \(as nbformat does on read\) and records outputs; it changes nothing else\./,
    );
    assert.doesNotMatch(text, /address those cells by cell_index/);

    const after = await batch(d, [
      {
        tool: "notebook",
        params: { action: "edit", notebook_path: "nb.ipynb", cell_id: one, content: "print('edited')" },
      },
    ]);
    assert.equal(
      resultText(after.results[0]),
      `Replaced cell 1 (code, id ${one}; old source "print('second', x + 1)"). Notebook now has 4 cells.`,
    );
    assert.deepEqual((await readNb(path)).cells[1].source, ["print('edited')"]);
  });
});
