/**
 * What the model read stays true between calls (docs/notebook-tool.md, "Indices between calls"):
 * one `nbagent batch` (one tool object) remembers the cells its last call on a notebook showed; when
 * another program (here Python's nbformat.write, as Jupyter saves) changes the file, a call by
 * cell_index that no longer names the cell the model saw is refused with what changed, leaving the
 * file byte-identical; one that still names it goes ahead and says what changed. The batch's own
 * calls and its runs' saves are never taken for another writer.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, test } from "node:test";
import { type Json, perTestDirs, python, readNb, resultText, spawnNbagent, writeNb } from "./helpers.js";

/** An `nbagent batch` fed one call at a time: each call waits for its result line. */
function batchSession(cwd: string) {
  const child = spawnNbagent(["batch", "--cwd", cwd]);
  child.stderr.resume();
  const lines = createInterface({ input: child.stdout });
  const waiting: ((line: string) => void)[] = [];
  lines.on("line", (line) => waiting.shift()?.(line));
  const closed = new Promise((resolve) => child.on("close", resolve));
  return {
    async call(tool: string, params: Json): Promise<Json> {
      const line = new Promise<string>((resolve) => waiting.push(resolve));
      child.stdin.write(`${JSON.stringify({ tool, params })}\n`);
      return JSON.parse(await line);
    },
    async end() {
      child.stdin.end();
      await closed;
    },
  };
}

/** Another program changes the notebook as Jupyter saves it: nbformat.read, change, nbformat.write. */
async function otherProgram(path: string, change: string): Promise<void> {
  const code =
    "import sys, nbformat\nfrom nbformat.v4 import new_markdown_cell, new_code_cell\n" +
    "p = sys.argv[1]\nnb = nbformat.read(p, as_version=4)\n" +
    "def cell(src, id):\n    c = new_code_cell(src)\n    c['id'] = id\n    return c\n" +
    `${change}\nnbformat.write(nb, p)\n`;
  await python(["-c", code, path]);
}

const ids = async (path: string) => (await readNb(path)).cells.map((c: Json) => c.id);

async function fourCells(dir: string): Promise<string> {
  return writeNb(join(dir, "nb.ipynb"), [
    ["code", "import time"],
    ["code", "x = 1\nprint(x)"],
    ["code", "for i in range(3):\n    print(i)"],
    ["code", "print('done')"],
  ]);
}

describe("indices between calls", { concurrency: true }, () => {
  const dir = perTestDirs();

  test("another program inserts a cell: edit and delete by index are refused, the file stays byte-identical", async () => {
    const cwd = await dir();
    const path = await fourCells(cwd);
    const s = batchSession(cwd);
    try {
      const run = await s.call("notebook", { action: "run", notebook_path: "nb.ipynb" });
      assert.equal(run.isError, false, resultText(run));
      const read = await s.call("notebook", { action: "read", notebook_path: "nb.ipynb" });
      assert.match(resultText(read), /^nb\.ipynb: 4 cells/);

      await otherProgram(path, "nb.cells.insert(0, cell('# added by another program', 'ext1'))");
      const before = await readFile(path);
      const edit = await s.call("notebook", {
        action: "edit",
        notebook_path: "nb.ipynb",
        cell_index: 2,
        content: "x = 2",
      });
      assert.equal(edit.isError, true);
      assert.equal(
        resultText(edit),
        'Error: cell_index 2 no longer names the cell you saw there: nb.ipynb changed since your last call on it (another program or session wrote it): a cell was inserted at index 0 (code, id ext1, "# added by another program"). The cell you saw at index 2 (code, id c2, "for i in range(3):") is now at index 3. Index 2 now holds a code cell (id c1): "x = 1". Nothing was changed; for the cell you saw, use cell_id "c2" (or cell_index 3), or read the notebook again.',
      );
      assert.deepEqual(await readFile(path), before, "a refused edit leaves the file byte-identical");

      // The refusal told what changed: the cell's id (or its new index) reaches it.
      const byId = await s.call("notebook", {
        action: "edit",
        notebook_path: "nb.ipynb",
        cell_id: "c2",
        content: "for i in range(4):\n    print(i)",
      });
      assert.equal(
        resultText(byId),
        'Replaced cell 3 (code, id c2; old source "for i in range(3):" (2 lines)). Notebook now has 5 cells.',
      );

      // Again: the program inserts two cells; delete by index is refused, nothing is removed.
      await otherProgram(path, "nb.cells[1:1] = [cell('a = 1', 'ext2'), cell('b = 2', 'ext3')]");
      const again = await readFile(path);
      const del = await s.call("notebook", { action: "delete", notebook_path: "nb.ipynb", cell_index: 1 });
      assert.equal(del.isError, true);
      assert.equal(
        resultText(del),
        'Error: cell_index 1 no longer names the cell you saw there: nb.ipynb changed since your last call on it (another program or session wrote it): 2 cells were inserted at indices 1-2 (code, id ext2, "a = 1"; code, id ext3, "b = 2"). The cell you saw at index 1 (code, id c0, "import time") is now at index 3. Index 1 now holds a code cell (id ext2): "a = 1". Nothing was changed; for the cell you saw, use cell_id "c0" (or cell_index 3), or read the notebook again.',
      );
      assert.deepEqual(await readFile(path), again, "a refused delete leaves the file byte-identical");
      assert.deepEqual(await ids(path), ["ext1", "ext2", "ext3", "c0", "c1", "c2", "c3"]);

      // Now the batch has been told: the new index names the cell, and the result quotes what went.
      const ok = await s.call("notebook", { action: "delete", notebook_path: "nb.ipynb", cell_index: 4 });
      assert.equal(
        resultText(ok),
        'Deleted cell 4 (code, id c1; source "x = 1" (2 lines), with 1 output). Notebook now has 6 cells.',
      );
    } finally {
      await s.end();
    }
  });

  test("an index that still names the cell the model saw: the call goes ahead and says what changed", async () => {
    const cwd = await dir();
    const path = await fourCells(cwd);
    const s = batchSession(cwd);
    try {
      await s.call("notebook", { action: "read", notebook_path: "nb.ipynb" });
      await otherProgram(
        path,
        "nb.cells[3].source = 'print(\"changed\")'\nnb.cells.append(new_markdown_cell('the end'))\nnb.cells[4]['id'] = 'm1'",
      );
      const r = await s.call("notebook", {
        action: "edit",
        notebook_path: "nb.ipynb",
        cell_index: 1,
        content: "x = 10",
      });
      assert.equal(r.isError, false, resultText(r));
      assert.equal(
        resultText(r),
        'Replaced cell 1 (code, id c1; old source "x = 1" (2 lines)). Notebook now has 5 cells.\n\nNote: nb.ipynb changed since your last call on it (another program or session wrote it): a cell was inserted at index 4 (markdown, id m1, "the end"); cell 3 (id c3) was edited (its source now begins "print(\\"changed\\")"). The indices in this result are the file\'s as it is now.',
      );
      // An edit of the very cell the program changed would overwrite its change: refused.
      await otherProgram(path, "nb.cells[2].source = 'for i in range(9): pass'");
      const before = await readFile(path);
      const over = await s.call("notebook", {
        action: "edit",
        notebook_path: "nb.ipynb",
        cell_index: 2,
        content: "pass",
      });
      assert.equal(
        resultText(over),
        'Error: cell 2 (id c2) was changed since you saw it: nb.ipynb changed since your last call on it (another program or session wrote it): cell 2 (id c2) was edited (its source now begins "for i in range(9): pass"). Nothing was changed; read it again (cell_index 2) and redo the edit if it still applies.',
      );
      assert.deepEqual(await readFile(path), before);
    } finally {
      await s.end();
    }
  });

  test("insert by index: refused where the place moved, done at the top", async () => {
    const cwd = await dir();
    const path = await fourCells(cwd);
    const s = batchSession(cwd);
    try {
      await s.call("notebook", { action: "read", notebook_path: "nb.ipynb" });
      await otherProgram(path, "del nb.cells[1]");
      const before = await readFile(path);
      const mid = await s.call("notebook", {
        action: "insert",
        notebook_path: "nb.ipynb",
        cell_index: 2,
        content: "y = 1",
      });
      assert.equal(
        resultText(mid),
        'Error: cell_index 2 may no longer be the place you meant: nb.ipynb changed since your last call on it (another program or session wrote it): the cell you saw at index 1 (code, id c1, "x = 1") was deleted. The cell you saw at index 2 (code, id c2, "for i in range(3):") is now at index 1. Index 2 now holds a code cell (id c3): "print(\'done\')". Nothing was changed; insert by the cells as they are now (with cell_id the new cell goes before that cell), or read the notebook again.',
      );
      assert.deepEqual(await readFile(path), before);
      await otherProgram(path, "nb.cells.insert(0, cell('# top', 'ext1'))");
      const top = await s.call("notebook", {
        action: "insert",
        notebook_path: "nb.ipynb",
        cell_index: 0,
        content: "import os",
      });
      assert.equal(top.isError, false, resultText(top));
      assert.match(
        resultText(top),
        /^Inserted code cell at position 0 \(id [0-9a-f]{8}\)\. Notebook now has 5 cells\.\n\nNote: nb\.ipynb changed since your last call on it \(another program or session wrote it\): a cell was inserted at index 0 \(code, id ext1, "# top"\)\. The indices in this result are the file's as it is now\.$/,
      );
      // A run by indices is checked the same way: it would run other cells than the model meant.
      await otherProgram(path, "nb.cells.insert(2, cell('raise SystemExit', 'ext2'))");
      const run = await s.call("notebook", { action: "run", notebook_path: "nb.ipynb", cell_range: [1, 3] });
      assert.equal(
        resultText(run),
        'Error: cell_range [1, 3] no longer names the cells you saw there: nb.ipynb changed since your last call on it (another program or session wrote it): a cell was inserted at index 2 (code, id ext2, "raise SystemExit"). The cell you saw at index 2 (code, id c0, "import time") is now at index 3. Index 2 now holds a code cell (id ext2): "raise SystemExit". Nothing was changed; read the notebook again.',
      );
    } finally {
      await s.end();
    }
  });

  test("the batch's own calls and its run's saves are not another writer; a batch's first call is never refused", async () => {
    const cwd = await dir();
    const path = await fourCells(cwd);
    // Changed before the batch ever saw it: nothing to compare with.
    await otherProgram(path, "nb.cells.insert(0, cell('# first', 'ext1'))");
    const s = batchSession(cwd);
    try {
      const texts: string[] = [];
      for (const params of [
        { action: "edit", cell_index: 2, content: "x = 5\nprint(x)" },
        { action: "insert", cell_index: 1, content: "y = 1" },
        { action: "run" },
        { action: "edit", cell_index: 3, content: "x = 6\nprint(x)" },
        { action: "move", cell_index: 1, to_index: 0 },
        { action: "run", cell_index: 3 },
        { action: "delete", cell_index: 0 },
      ]) {
        const r = await s.call("notebook", { notebook_path: "nb.ipynb", ...params });
        assert.equal(r.isError, false, resultText(r));
        texts.push(resultText(r));
      }
      for (const t of texts) assert.doesNotMatch(t, /changed since your last call|Note: nb\.ipynb/);
      assert.deepEqual(await ids(path), ["ext1", "c0", "c1", "c2", "c3"]);
    } finally {
      await s.end();
    }
  });
});
