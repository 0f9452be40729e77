/** The notebook tool's edit, insert and delete, against real files, nbformat.validate as oracle. */
import assert from "node:assert/strict";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { call, Oracle, readJson, tempDir, text, writeNotebook } from "./helpers.js";

let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

async function assertValid(path: string): Promise<void> {
  const v = await oracle.check(path);
  assert.ok(v.valid, `nbformat.validate failed for ${path}: ${v.error}`);
  assert.ok(v.canonical, `${path} is not what nbformat.write would write`);
}

async function threeCells(dir: string, name = "nb.ipynb"): Promise<string> {
  return writeNotebook(join(dir, name), [
    {
      source: "x = 1\nprint(x)",
      execution_count: 1,
      outputs: [{ output_type: "stream", name: "stdout", text: ["1\n"] }],
    },
    { type: "markdown", source: "# Title\ntext" },
    { source: "y = 2" },
  ]);
}

describe("actions edit, insert, delete on an .ipynb", () => {
  test("each action changes the file as asked and the file stays valid", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    const e = await call(dir, { action: "edit", notebook_path: "nb.ipynb", cell_index: 2, content: "y = 3" });
    assert.equal(e.isError, undefined, text(e));
    assert.deepEqual((await readJson(path)).cells[2].source, ["y = 3"]);
    const i = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 0,
      content: "import os",
    });
    assert.equal(i.isError, undefined, text(i));
    assert.deepEqual((await readJson(path)).cells[0].source, ["import os"]);
    const d = await call(dir, { action: "delete", notebook_path: "nb.ipynb", cell_index: 1 });
    assert.equal(d.isError, undefined, text(d));
    const nb = await readJson(path);
    assert.deepEqual(
      nb.cells.map((c: { source: string[] }) => c.source.join("")),
      ["import os", "# Title\ntext", "y = 3"],
    );
    await assertValid(path);
  });
});

describe("paths resolve against the session's working directory", () => {
  test("relative to cwd (not the process cwd), absolute, and ~", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "sub"));
    const path = await threeCells(join(dir, "sub"));
    assert.notEqual(process.cwd(), dir);
    const rel = await call(dir, {
      action: "edit",
      notebook_path: "sub/nb.ipynb",
      cell_index: 0,
      content: "a",
    });
    assert.equal(rel.isError, undefined, text(rel));
    const abs = await call("/", { action: "edit", notebook_path: path, cell_index: 0, content: "b" });
    assert.equal(abs.isError, undefined, text(abs));
    assert.deepEqual((await readJson(path)).cells[0].source, ["b"]);
    // The same relative path from another cwd is a different (missing) file.
    const other = await call(join(dir, "sub"), {
      action: "edit",
      notebook_path: "sub/nb.ipynb",
      cell_index: 0,
      content: "c",
    });
    // The error names where the path led and what relative paths resolve against.
    assert.equal(
      text(other),
      `Error: Notebook not found: sub/nb.ipynb. Full path: ${dir}/sub/sub/nb.ipynb (relative paths resolve against ${dir}/sub, this session's working directory).`,
    );
    // `~` expands to the home directory (HOME points at the temp dir for this test process only).
    const savedHome = process.env.HOME;
    process.env.HOME = dir;
    try {
      assert.equal(homedir(), dir);
      const home = await call("/", {
        action: "edit",
        notebook_path: "~/sub/nb.ipynb",
        cell_index: 0,
        content: "d",
      });
      assert.equal(home.isError, undefined, text(home));
    } finally {
      process.env.HOME = savedHome;
    }
    assert.deepEqual((await readJson(path)).cells[0].source, ["d"]);
    await assertValid(path);
  });
});

describe("cells array and index bounds", () => {
  test("insert accepts 0..count (count appends); others 0..count-1; negative/fractional rejected", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    const append = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 3,
      content: "last",
    });
    assert.equal(append.isError, undefined, text(append));
    assert.deepEqual((await readJson(path)).cells[3].source, ["last"]);
    const before = await readFile(path);
    const cases: [Record<string, unknown>, string][] = [
      [
        { action: "insert", cell_index: 5, content: "x" },
        "Error: Cell index 5 out of range for insert (0-4) in nb.ipynb",
      ],
      [
        { action: "insert", cell_index: -1, content: "x" },
        "Error: Cell index -1 out of range for insert (0-4) in nb.ipynb",
      ],
      [{ action: "edit", cell_index: 4, content: "x" }, "Error: Cell index 4 out of range (0-3) in nb.ipynb"],
      [{ action: "delete", cell_index: 4 }, "Error: Cell index 4 out of range (0-3) in nb.ipynb"],
      [{ action: "delete", cell_index: -2 }, "Error: Cell index -2 out of range (0-3) in nb.ipynb"],
      [{ action: "edit", cell_index: 1.5, content: "x" }, "Error: cell_index must be an integer, got 1.5"],
      [{ action: "delete", cell_index: "1" }, 'Error: cell_index must be an integer, got "1"'],
    ];
    for (const [params, expected] of cases) {
      const r = await call(dir, { notebook_path: "nb.ipynb", ...params });
      assert.equal(r.isError, true);
      assert.equal(text(r), expected);
    }
    assert.deepEqual(await readFile(path), before);
    await assertValid(path);
  });
});

describe("source normalisation", () => {
  test("content becomes a line list; line breaks never lost or doubled", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    const cases: [string, string[]][] = [
      ["a\nb", ["a\n", "b"]],
      ["a\n", ["a\n"]],
      ["", []],
      ["\n", ["\n"]],
      ["a\n\nb\n", ["a\n", "\n", "b\n"]],
      ["x\r\ny", ["x\r\n", "y"]],
    ];
    for (const [content, expected] of cases) {
      const r = await call(dir, { action: "edit", notebook_path: "nb.ipynb", cell_index: 0, content });
      assert.equal(r.isError, undefined, text(r));
      const source = (await readJson(path)).cells[0].source;
      assert.deepEqual(source, expected);
      assert.equal(source.join(""), content);
      await assertValid(path);
    }
  });
});

describe("edit replaces the source and keeps the cell type", () => {
  test("markdown stays markdown; a code cell keeps its other fields", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    await call(dir, { action: "edit", notebook_path: "nb.ipynb", cell_index: 1, content: "## new" });
    await call(dir, { action: "edit", notebook_path: "nb.ipynb", cell_index: 0, content: "x = 2" });
    const nb = await readJson(path);
    assert.equal(nb.cells[1].cell_type, "markdown");
    assert.deepEqual(nb.cells[1].source, ["## new"]);
    assert.equal(nb.cells[0].cell_type, "code");
    assert.equal(nb.cells[0].id, "cell-0");
    assert.equal(nb.cells[0].execution_count, 1);
    await assertValid(path);
  });
});

describe("insert: default code; code and markdown cell shapes", () => {
  test("code cell has execution_count null and outputs []; markdown only metadata, source, id", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    await call(dir, { action: "insert", notebook_path: "nb.ipynb", cell_index: 1, content: "z = 1" });
    await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 0,
      content: "*hi*",
      cell_type: "markdown",
    });
    const nb = await readJson(path);
    const code = nb.cells[2];
    assert.deepEqual(Object.keys(code).sort(), [
      "cell_type",
      "execution_count",
      "id",
      "metadata",
      "outputs",
      "source",
    ]);
    assert.equal(code.cell_type, "code");
    assert.equal(code.execution_count, null);
    assert.deepEqual(code.outputs, []);
    const md = nb.cells[0];
    assert.deepEqual(Object.keys(md).sort(), ["cell_type", "id", "metadata", "source"]);
    assert.deepEqual(md.metadata, {});
    await assertValid(path);
  });
});

describe("delete returns the removed source", () => {
  test("details.cellSource is the removed cell's source", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    const r = await call(dir, { action: "delete", notebook_path: "nb.ipynb", cell_index: 0 });
    assert.equal(r.details.cellSource, "x = 1\nprint(x)");
    assert.equal((await readJson(path)).cells.length, 2);
    await assertValid(path);
  });
});

describe("written as nbformat.write would", () => {
  test("one-space indent, sorted keys, non-ASCII kept, trailing newline", async () => {
    const dir = await tempDir();
    const path = await threeCells(dir);
    await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 0,
      content: "s = 'héllo 😀'\n",
    });
    const raw = await readFile(path, "utf8");
    assert.ok(raw.startsWith('{\n "cells": [\n  {\n'));
    assert.ok(raw.includes("héllo 😀"));
    assert.ok(raw.endsWith("}\n"));
    await assertValid(path); // includes: nbformat.writes(nbformat.reads(file)) == file
  });
});

describe("result texts and details", () => {
  test("exact summaries and {action, cellIndex, cellType, totalCells, cellSource}", async () => {
    const dir = await tempDir();
    await threeCells(dir);
    const e = await call(dir, { action: "edit", notebook_path: "nb.ipynb", cell_index: 1, content: "# T" });
    assert.equal(
      text(e),
      'Replaced cell 1 (markdown, id cell-1; old source "# Title" (2 lines)). Notebook now has 3 cells.',
    );
    assert.deepEqual(
      { ...e.details, cellId: undefined, notebookPath: undefined },
      {
        action: "edit",
        cellIndex: 1,
        cellType: "markdown",
        totalCells: 3,
        cellSource: "# T",
        cellId: undefined,
        notebookPath: undefined,
      },
    );
    const i = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 3,
      content: "q",
      cell_type: "markdown",
    });
    assert.equal(
      text(i),
      `Inserted markdown cell at position 3 (id ${i.details.cellId}). Notebook now has 4 cells.`,
    );
    assert.match(i.details.cellId ?? "", /^[0-9a-f]{8}$/);
    assert.equal(i.details.action, "insert");
    assert.equal(i.details.cellIndex, 3);
    assert.equal(i.details.cellType, "markdown");
    assert.equal(i.details.totalCells, 4);
    assert.equal(i.details.cellSource, "q");
    const d = await call(dir, { action: "delete", notebook_path: "nb.ipynb", cell_index: 0 });
    assert.equal(
      text(d),
      'Deleted cell 0 (code, id cell-0; source "x = 1" (2 lines), with 1 output). Notebook now has 3 cells.',
    );
    assert.equal(d.details.totalCells, 3);
    assert.equal(d.details.cellType, "code");
  });
});

describe("hard errors leave the file untouched", () => {
  test("each error text exactly", async () => {
    const dir = await tempDir();
    const good = await threeCells(dir);
    await writeFile(join(dir, "bad.ipynb"), '{"cells": [');
    await writeFile(join(dir, "nocells.ipynb"), '{"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n');
    await writeFile(join(dir, "cellsobj.ipynb"), '{"cells": {}, "nbformat": 4, "nbformat_minor": 5}\n');
    const cases: [Record<string, unknown>, string][] = [
      [
        { action: "edit", notebook_path: "missing.ipynb", cell_index: 0, content: "x" },
        `Error: Notebook not found: missing.ipynb. Full path: ${dir}/missing.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "edit", notebook_path: "bad.ipynb", cell_index: 0, content: "x" },
        "Error: Invalid JSON in notebook: bad.ipynb (line 1, column 12: the file ends before the JSON does (cut off?))",
      ],
      [
        { action: "delete", notebook_path: "nocells.ipynb", cell_index: 0 },
        "Error: Invalid notebook structure (missing cells array): nocells.ipynb",
      ],
      [
        { action: "delete", notebook_path: "cellsobj.ipynb", cell_index: 0 },
        "Error: Invalid notebook structure (missing cells array): cellsobj.ipynb",
      ],
      [
        { action: "insert", notebook_path: "nb.ipynb", cell_index: 9, content: "x" },
        "Error: Cell index 9 out of range for insert (0-3) in nb.ipynb",
      ],
      [
        { action: "edit", notebook_path: "nb.ipynb", cell_index: 3, content: "x" },
        "Error: Cell index 3 out of range (0-2) in nb.ipynb",
      ],
      [
        { action: "edit", notebook_path: "nb.ipynb", cell_index: 0 },
        "Error: Content is required for edit action",
      ],
      [
        { action: "insert", notebook_path: "nb.ipynb", cell_index: 0 },
        "Error: Content is required for insert action",
      ],
    ];
    const snapshot = async () =>
      Promise.all(
        ["nb.ipynb", "bad.ipynb", "nocells.ipynb", "cellsobj.ipynb"].map((n) => readFile(join(dir, n))),
      );
    const before = await snapshot();
    for (const [params, expected] of cases) {
      const r = await call(dir, params);
      assert.equal(r.isError, true, expected);
      assert.equal(text(r), expected);
      assert.deepEqual(await snapshot(), before);
    }
    await assertValid(good);
  });

  test("a symlinked notebook is edited through the link and stays a link", async () => {
    const dir = await tempDir();
    const real = await threeCells(dir, "real.ipynb");
    await symlink(real, join(dir, "link.ipynb"));
    const r = await call(dir, {
      action: "edit",
      notebook_path: "link.ipynb",
      cell_index: 0,
      content: "via link",
    });
    assert.equal(r.isError, undefined, text(r));
    assert.deepEqual((await readJson(real)).cells[0].source, ["via link"]);
    const { lstat } = await import("node:fs/promises");
    assert.ok((await lstat(join(dir, "link.ipynb"))).isSymbolicLink());
  });
});
