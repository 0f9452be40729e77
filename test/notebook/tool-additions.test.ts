/** The notebook tool beyond edit/insert/delete: cell_id, read, move, clear_outputs, cell_type change, ids, run slot. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { createNotebookTool, type NotebookRunRequest } from "../../src/tools/notebook/notebook.js";
import { call, Oracle, PYTHON, readJson, tempDir, text, writeNotebook } from "./helpers.js";

const run = promisify(execFile);

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

// 1x1 PNG (IHDR says 640x480 — only the header is read)
const PNG_640x480 =
  "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAIAAAC6s0uzAAAADUlEQVR4nGNgGAWDEwAAAZAAAcb6mX0AAAAASUVORK5CYII=";

async function sample(dir: string, minor = 5): Promise<string> {
  return writeNotebook(
    join(dir, "nb.ipynb"),
    [
      {
        source: "print('a')",
        execution_count: 3,
        outputs: [
          {
            output_type: "stream",
            name: "stdout",
            text: ["line 1\n", "line 2\n", "line 3\n", "line 4\n", "line 5\n"],
          },
          {
            output_type: "display_data",
            data: { "image/png": PNG_640x480, "text/plain": ["<Figure size 640x480 with 1 Axes>"] },
            metadata: {},
          },
          {
            output_type: "error",
            ename: "ValueError",
            evalue: "bad value",
            traceback: ["\u001b[31mValueError\u001b[0m"],
          },
        ],
        id: "first",
      },
      { type: "markdown", source: "# Heading", id: "second" },
      { source: "x = 1", execution_count: 4, id: "third" },
    ],
    minor,
  );
}

describe("read shows attachments", () => {
  test("a markdown cell's attachments are listed", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const nb = await readJson(path);
    nb.cells[1].attachments = { "a.png": { "image/png": PNG_640x480 } };
    const { serializeNotebook } = await import("../../src/notebook/index.js");
    await writeFile(path, serializeNotebook(nb));
    const r = await call(dir, { action: "read", notebook_path: "nb.ipynb", cell_index: 1 });
    assert.match(text(r), /-- attachments: a\.png \(image\/png\)/);
    assert.ok((await oracle.check(path)).valid);
  });
});

describe("cell_id addresses a cell instead of cell_index", () => {
  test("edit, delete, insert (at that cell's position) and move by id", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const e = await call(dir, {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_id: "third",
      content: "x = 2",
    });
    assert.equal(text(e), 'Replaced cell 2 (code, id third; old source "x = 1"). Notebook now has 3 cells.');
    const i = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_id: "second",
      content: "new",
    });
    assert.equal(
      text(i),
      `Inserted code cell at position 1 (id ${i.details.cellId}). Notebook now has 4 cells.`,
    );
    const m = await call(dir, { action: "move", notebook_path: "nb.ipynb", cell_id: "first", to_index: 3 });
    assert.equal(text(m), "Moved cell 0 (code, id first) to position 3. Notebook now has 4 cells.");
    const d = await call(dir, { action: "delete", notebook_path: "nb.ipynb", cell_id: "second" });
    assert.equal(d.details.cellSource, "# Heading");
    const nb = await readJson(path);
    assert.deepEqual(
      nb.cells.map((c: { id: string; source: string[] }) => [c.id, c.source.join("")]),
      [
        [i.details.cellId, "new"],
        ["third", "x = 2"],
        ["first", "print('a')"],
      ],
    );
    await assertValid(path);
  });

  test("both, neither, unknown id, and ids on a pre-4.5 notebook are errors; file untouched", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const before = await readFile(path);
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { action: "edit", cell_index: 0, cell_id: "first", content: "x" },
        /^Error: Give either cell_index or cell_id, not both\.$/,
      ],
      [{ action: "edit", content: "x" }, /^Error: edit needs cell_index or cell_id/],
      [{ action: "delete" }, /^Error: delete needs cell_index or cell_id/],
      [{ action: "insert", content: "x" }, /^Error: insert needs cell_index or cell_id/],
      [{ action: "move", cell_index: 0 }, /^Error: move needs to_index/],
      [
        { action: "edit", cell_id: "nope", content: "x" },
        /^Error: No cell with id "nope" in nb\.ipynb\. Use action read/,
      ],
      [{ action: "edit", cell_id: "", content: "x" }, /^Error: cell_id must be a non-empty string/],
    ];
    for (const [params, expected] of cases) {
      const r = await call(dir, { notebook_path: "nb.ipynb", ...params });
      assert.equal(r.isError, true);
      assert.match(text(r), expected);
    }
    assert.deepEqual(await readFile(path), before);
    const old = await sample(await tempDir(), 4);
    const r = await call(dir, { action: "edit", notebook_path: old, cell_id: "first", content: "x" });
    assert.match(text(r), /has no cell ids; use cell_index/);
  });
});

describe("read", () => {
  test("cells with index, id, type, source and a bounded output summary with image size", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const before = await readFile(path);
    const r = await call(dir, { action: "read", notebook_path: "nb.ipynb" });
    const t = text(r);
    assert.match(t, /^nb\.ipynb: 3 cells, nbformat 4\.5/);
    assert.match(
      t,
      /## cell 0 · code · id first · execution_count 3\nprint\('a'\)\n-- outputs \(1 stream, 1 display_data, 1 error\)/,
    );
    assert.match(t, /stdout: line 1\n {3}stdout: line 2\n {3}stdout: line 3\n {3}stdout: … \(2 more lines\)/);
    assert.match(t, /\[image 1 · cell 0 · 640×480\]/);
    assert.equal(r.content[1]?.type, "image");
    // the figure's repr says less than its image: left out, and not named
    assert.match(t, / {3}\[image 1 · cell 0 · 640×480\]\n {3}ValueError: bad value/);
    assert.match(t, /ValueError: bad value/);
    assert.match(t, /## cell 1 · markdown · id second\n# Heading/);
    assert.equal(r.details.cells?.length, 3);
    assert.deepEqual(
      r.details.cells?.map((c) => [c.index, c.id, c.cellType, c.source]),
      [
        [0, "first", "code", "print('a')"],
        [1, "second", "markdown", "# Heading"],
        [2, "third", "code", "x = 1"],
      ],
    );
    assert.deepEqual(await readFile(path), before, "read never writes");
  });

  test("offset/limit, a single cell, and a size bound that says where to continue", async () => {
    const dir = await tempDir();
    const cells = Array.from({ length: 60 }, (_, i) => ({ source: `# cell ${i}\n${"x".repeat(1000)}` }));
    await writeNotebook(join(dir, "big.ipynb"), cells);
    const page = await call(dir, { action: "read", notebook_path: "big.ipynb", offset: 10, limit: 5 });
    assert.deepEqual(
      page.details.cells?.map((c) => c.index),
      [10, 11, 12, 13, 14],
    );
    const one = await call(dir, { action: "read", notebook_path: "big.ipynb", cell_index: 42 });
    assert.deepEqual(
      one.details.cells?.map((c) => c.index),
      [42],
    );
    assert.equal(one.details.cellSource, `# cell 42\n${"x".repeat(1000)}`);
    const tool = createNotebookTool({ cwd: dir, readBudget: 10_000 });
    const all = await tool.execute("t", { action: "read", notebook_path: "big.ipynb" });
    assert.ok(text(all).length < 12_000, `read text is bounded (${text(all).length})`);
    const next = all.details.nextOffset!;
    assert.ok(next > 0 && next < 60);
    assert.match(text(all), new RegExp(`Use offset=${next} to continue`));
    const bad = await call(dir, { action: "read", notebook_path: "big.ipynb", offset: 60 });
    assert.equal(text(bad), "Error: Offset 60 out of range (0-59) in big.ipynb");
  });

  test("duplicate and missing ids are reported, not fixed", async () => {
    const dir = await tempDir();
    const path = join(dir, "dup.ipynb");
    await writeNotebook(path, [
      { source: "a", id: "same" },
      { source: "b", id: "same" },
    ]);
    const nb = await readJson(path);
    delete nb.cells[1].id;
    nb.cells.push({ ...nb.cells[0] });
    await writeFile(path, JSON.stringify(nb, null, 1));
    const before = await readFile(path);
    const r = await call(dir, { action: "read", notebook_path: "dup.ipynb" });
    assert.match(text(r), /- cell 1: "id" is missing/);
    assert.match(text(r), /- cells 0 and 2 share id "same"/);
    assert.equal(r.details.warnings?.length, 2);
    assert.deepEqual(await readFile(path), before);
  });
});

describe("move", () => {
  test("moves a cell to to_index; to_index out of range is an error", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const r = await call(dir, { action: "move", notebook_path: "nb.ipynb", cell_index: 2, to_index: 0 });
    assert.equal(text(r), "Moved cell 2 (code, id third) to position 0. Notebook now has 3 cells.");
    assert.deepEqual(
      (await readJson(path)).cells.map((c: { id: string }) => c.id),
      ["third", "first", "second"],
    );
    await assertValid(path);
    const before = await readFile(path);
    const bad = await call(dir, { action: "move", notebook_path: "nb.ipynb", cell_index: 0, to_index: 3 });
    assert.equal(text(bad), "Error: Target index 3 out of range (0-2) in nb.ipynb");
    assert.deepEqual(await readFile(path), before);
  });
});

describe("clear_outputs", () => {
  test("one cell, then all cells", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const one = await call(dir, { action: "clear_outputs", notebook_path: "nb.ipynb", cell_id: "first" });
    assert.equal(one.isError, undefined, text(one));
    let nb = await readJson(path);
    assert.deepEqual(nb.cells[0].outputs, []);
    assert.equal(nb.cells[0].execution_count, null);
    assert.equal(nb.cells[2].execution_count, 4);
    await assertValid(path);
    const all = await call(dir, { action: "clear_outputs", notebook_path: "nb.ipynb" });
    assert.equal(all.details.clearedCells, 1);
    nb = await readJson(path);
    assert.equal(nb.cells[2].execution_count, null);
    await assertValid(path);
  });
});

describe("edit with cell_type", () => {
  test("code → markdown drops outputs/execution_count; markdown → code adds them empty", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const r = await call(dir, {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_index: 0,
      content: "*now md*",
      cell_type: "markdown",
    });
    assert.equal(
      text(r),
      `Replaced cell 0 (markdown, id first; was code, dropped 3 outputs and execution count 3; old source "print('a')"). Notebook now has 3 cells.`,
    );
    let nb = await readJson(path);
    assert.deepEqual(Object.keys(nb.cells[0]).sort(), ["cell_type", "id", "metadata", "source"]);
    await assertValid(path);
    await call(dir, {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_index: 1,
      content: "y = 1",
      cell_type: "code",
    });
    nb = await readJson(path);
    assert.equal(nb.cells[1].cell_type, "code");
    assert.equal(nb.cells[1].execution_count, null);
    assert.deepEqual(nb.cells[1].outputs, []);
    assert.equal(nb.cells[1].id, "second");
    await assertValid(path);
  });
});

describe("cell ids", () => {
  test("4.5: new cells get unique valid ids; 4.4: none, file stays 4.4", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    for (let i = 0; i < 20; i++)
      await call(dir, { action: "insert", notebook_path: "nb.ipynb", cell_index: 0, content: `c${i}` });
    const ids = (await readJson(path)).cells.map((c: { id: string }) => c.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /^[a-zA-Z0-9-_]{1,64}$/);
    await assertValid(path);
    const oldDir = await tempDir();
    const old = await sample(oldDir, 4);
    await call(oldDir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 1,
      content: "x",
      cell_type: "markdown",
    });
    const nb = await readJson(old);
    assert.equal(nb.nbformat_minor, 4);
    assert.ok(nb.cells.every((c: object) => !("id" in c)));
    await assertValid(old);
  });
});

describe("nbformat 3", () => {
  test("is read as nbformat does (upgraded to 4.5 in memory), and the file is untouched", async () => {
    const dir = await tempDir();
    const path = join(dir, "it's old.ipynb");
    await run(PYTHON, [
      "-c",
      "import sys\nfrom nbformat import v3, writes\nnb = v3.new_notebook()\nws = v3.new_worksheet()\nws.cells.append(v3.new_code_cell('1+1'))\nnb.worksheets.append(ws)\nopen(sys.argv[1], 'w').write(writes(nb, version=3))",
      path,
    ]);
    const before = await readFile(path, "utf8");
    const r = await call(dir, { action: "read", notebook_path: "it's old.ipynb" });
    assert.equal(r.isError, undefined, text(r));
    assert.match(text(r), /1 cell, nbformat 4/);
    assert.match(
      text(r),
      /Note: it's old\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, for this call only: the file is unchanged/,
    );
    assert.equal(await readFile(path, "utf8"), before);
  });

  test("older versions are refused with the command that converts them; file untouched", async () => {
    const dir = await tempDir();
    const path = join(dir, "v2.ipynb");
    await writeFile(path, '{"nbformat": 2, "metadata": {}, "worksheets": []}');
    const r = await call(dir, { action: "read", notebook_path: "v2.ipynb" });
    assert.equal(r.isError, true);
    assert.match(
      text(r),
      /^Error: Invalid notebook structure \(missing cells array\): v2\.ipynb\. It is an nbformat 2 notebook; nbagent reads nbformat 4\. Convert it once/,
    );
    assert.equal(await readFile(path, "utf8"), '{"nbformat": 2, "metadata": {}, "worksheets": []}');
  });
});

describe("run slot", () => {
  test("without an executor run and execute: true are errors and nothing is written", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const before = await readFile(path);
    for (const params of [
      { action: "run", notebook_path: "nb.ipynb" },
      { action: "edit", notebook_path: "nb.ipynb", cell_index: 0, content: "x", execute: true },
    ]) {
      const r = await call(dir, params);
      assert.equal(r.isError, true);
      assert.match(text(r), /^Error: Running cells is not available/);
    }
    assert.deepEqual(await readFile(path), before);
  });

  test("with an executor, run hands over the resolved cells; execute: true runs after the save", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const requests: NotebookRunRequest[] = [];
    const tool = createNotebookTool({
      cwd: dir,
      executor: {
        async run(req) {
          requests.push(req);
          const onDisk = (await readJson(req.path)).cells.map((c: { source: string[] }) => c.source.join(""));
          return {
            content: [{ type: "text", text: `ran ${req.cellIndices.join(",")}` }],
            details: { onDisk },
          };
        },
      },
    });
    const schema = JSON.stringify(tool.parameters);
    assert.match(schema, /"run"/);
    assert.match(schema, /"execute"/);
    const r = await tool.execute("t", {
      action: "run",
      notebook_path: "nb.ipynb",
      cell_index: 1,
      to_index: 2,
    });
    assert.equal(text(r), "ran 1,2");
    const e = await tool.execute("t", {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_index: 2,
      content: "x = 9",
      execute: true,
    });
    assert.deepEqual(
      e.content.map((c) => (c.type === "text" ? c.text : "")),
      ['Replaced cell 2 (code, id third; old source "x = 1"). Notebook now has 3 cells.', "ran 2"],
    );
    assert.equal(requests[1].path, path);
    assert.deepEqual((e.details as unknown as { run: { onDisk: string[] } }).run.onDisk[2], "x = 9");
    assert.ok(!JSON.stringify(createNotebookTool({ cwd: dir }).parameters).includes('"run"'));
  });

  test("unknown action", async () => {
    const dir = await tempDir();
    await sample(dir);
    const r = await call(dir, { action: "explode", notebook_path: "nb.ipynb" });
    assert.equal(
      text(r),
      'Error: Unknown action "explode". Use one of: edit, replace, insert, delete, read, move, clear_outputs, tags.',
    );
  });
});

describe("tags", () => {
  test("the tags action adds and removes, keeping order; edit/insert set the whole list", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const a = await call(dir, {
      action: "tags",
      notebook_path: "nb.ipynb",
      cell_index: 2,
      add: ["slow", "raises-exception"],
    });
    assert.equal(
      text(a),
      "Tags of cell 2 (id third): slow, raises-exception (added slow, raises-exception).",
    );
    let nb = await readJson(path);
    assert.deepEqual(nb.cells[2].metadata.tags, ["slow", "raises-exception"]);
    await assertValid(path);
    const r = await call(dir, {
      action: "tags",
      notebook_path: "nb.ipynb",
      cell_id: "third",
      add: ["raises-exception", "x"],
      remove: ["slow"],
    });
    assert.equal(text(r), "Tags of cell 2 (id third): raises-exception, x (added x; removed slow).");
    const same = await readFile(path);
    const n = await call(dir, { action: "tags", notebook_path: "nb.ipynb", cell_index: 2, remove: ["nope"] });
    assert.equal(
      text(n),
      "Tags of cell 2 (id third): raises-exception, x (unchanged). The file is unchanged.",
    );
    assert.deepEqual(await readFile(path), same);
    const e = await call(dir, {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_index: 2,
      content: "x = 2",
      tags: [],
    });
    assert.equal(
      text(e),
      'Replaced cell 2 (code, id third; old source "x = 1"). Tags: none (removed raises-exception, x). Notebook now has 3 cells.',
    );
    nb = await readJson(path);
    assert.deepEqual(nb.cells[2].metadata, {});
    const i = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 3,
      content: "1/0",
      tags: ["raises-exception"],
    });
    assert.equal(
      text(i),
      `Inserted code cell at position 3 (id ${i.details.cellId}). Tags: raises-exception. Notebook now has 4 cells.`,
    );
    nb = await readJson(path);
    assert.deepEqual(nb.cells[3].metadata, { tags: ["raises-exception"] });
    await assertValid(path);
    const read = await call(dir, { action: "read", notebook_path: "nb.ipynb" });
    assert.match(
      text(read),
      /^## cell 3 · code · id [0-9a-f]{8} · execution_count - · tags raises-exception$/m,
    );
    assert.match(text(read), /^## cell 2 · code · id third · execution_count 4$/m);
  });

  test("bad tags are refused with the file byte-identical", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    await call(dir, { action: "tags", notebook_path: "nb.ipynb", cell_index: 0, add: ["keep"] });
    const before = await readFile(path);
    const cases: [Record<string, unknown>, string][] = [
      [
        { action: "tags", cell_index: 0 },
        'Error: tags needs add and/or remove (arrays of tag names), e.g. add: ["skip-execution"].',
      ],
      [{ action: "tags", cell_index: 0, add: ["a", "a"] }, 'Error: add lists "a" twice; give each tag once.'],
      [
        { action: "tags", cell_index: 0, add: [""] },
        'Error: add must be an array of non-empty strings (tags to add), got [""]',
      ],
      [
        { action: "tags", cell_index: 0, remove: "keep" },
        'Error: remove must be an array of non-empty strings (tags to remove), got "keep"',
      ],
      [
        { action: "tags", cell_index: 0, add: ["k"], remove: ["k"] },
        'Error: "k" is in both add and remove; give it in one.',
      ],
      [{ action: "tags", add: ["k"] }, "Error: tags needs cell_index or cell_id (exactly one)."],
      [{ action: "tags", cell_index: 9, add: ["k"] }, "Error: Cell index 9 out of range (0-2) in nb.ipynb"],
      [
        { action: "edit", cell_index: 0, content: "x", tags: [1] },
        "Error: tags must be an array of non-empty strings (the cell's whole tag list), got [1]",
      ],
      [
        { action: "insert", cell_index: 0, content: "x", tags: ["b", "b"] },
        'Error: tags lists "b" twice; give each tag once.',
      ],
      [
        { action: "replace", cell_index: 0, old: "a", new: "b", tags: ["b"] },
        "Error: tags goes with edit and insert, not replace.",
      ],
      [{ action: "edit", cell_index: 0, content: "x", add: ["b"] }, "Error: add goes with tags, not edit."],
    ];
    for (const [params, message] of cases) {
      const r = await call(dir, { notebook_path: "nb.ipynb", ...params });
      assert.equal(text(r), message, JSON.stringify(params));
      assert.deepEqual(await readFile(path), before, JSON.stringify(params));
    }
  });
});

describe("creating a notebook keeps tags and raw", () => {
  test("insert into a missing path with tags and cell_type raw", async () => {
    const dir = await tempDir();
    const r = await call(dir, {
      action: "insert",
      notebook_path: "new.ipynb",
      cell_index: 0,
      content: "raw",
      cell_type: "raw",
      tags: ["skip-execution"],
    });
    assert.match(
      text(r),
      /Inserted raw cell at position 0 \(id [0-9a-f]{8}\)\. Tags: skip-execution\. Notebook now has 1 cell\.$/,
    );
    const nb = await readJson(join(dir, "new.ipynb"));
    assert.equal(nb.cells[0].cell_type, "raw");
    assert.deepEqual(nb.cells[0].metadata, { tags: ["skip-execution"] });
    await assertValid(join(dir, "new.ipynb"));
  });
});

describe("raw cells", () => {
  test("insert a raw cell; edit code → raw drops outputs and execution count and says so", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const i = await call(dir, {
      action: "insert",
      notebook_path: "nb.ipynb",
      cell_index: 1,
      content: "\\LaTeX",
      cell_type: "raw",
    });
    assert.equal(
      text(i),
      `Inserted raw cell at position 1 (id ${i.details.cellId}). Notebook now has 4 cells.`,
    );
    let nb = await readJson(path);
    assert.deepEqual(Object.keys(nb.cells[1]).sort(), ["cell_type", "id", "metadata", "source"]);
    await assertValid(path);
    const e = await call(dir, {
      action: "edit",
      notebook_path: "nb.ipynb",
      cell_index: 0,
      content: "raw text",
      cell_type: "raw",
    });
    assert.equal(
      text(e),
      `Replaced cell 0 (raw, id first; was code, dropped 3 outputs and execution count 3; old source "print('a')"). Notebook now has 4 cells.`,
    );
    nb = await readJson(path);
    assert.deepEqual(Object.keys(nb.cells[0]).sort(), ["cell_type", "id", "metadata", "source"]);
    await assertValid(path);
  });
});

describe("attachments are kept by every action that keeps the cell", () => {
  test("edit, replace, move, tags, clear_outputs leave a markdown and a raw cell's attachments as they were", async () => {
    const dir = await tempDir();
    const path = join(dir, "att.ipynb");
    const script = `
import nbformat, sys
from nbformat.v4 import new_notebook, new_markdown_cell, new_raw_cell, new_code_cell
png = "${PNG_640x480}"
nb = new_notebook(cells=[
    new_code_cell("print(1)"),
    new_markdown_cell("![a](attachment:a.png) hello", attachments={"a.png": {"image/png": png}}),
    new_raw_cell("raw hello", attachments={"b.png": {"image/png": png}}),
])
nbformat.write(nb, sys.argv[1])
`;
    await run(PYTHON, ["-c", script, path]);
    await assertValid(path);
    const original = await readJson(path);
    const steps: Record<string, unknown>[] = [
      { action: "edit", cell_index: 1, content: "![a](attachment:a.png) edited" },
      { action: "replace", cell_index: 2, old: "hello", new: "world" },
      { action: "move", cell_index: 0, to_index: 2 },
      { action: "tags", cell_index: 0, add: ["keep"] },
      { action: "tags", cell_index: 1, add: ["keep"] },
      { action: "clear_outputs" },
      { action: "edit", cell_index: 1, content: "raw again", tags: ["t"] },
    ];
    for (const step of steps) {
      const r = await call(dir, { notebook_path: "att.ipynb", ...step });
      assert.doesNotMatch(text(r), /^Error/, JSON.stringify(step));
      const nb = await readJson(path);
      const md = nb.cells.find((c: { cell_type: string }) => c.cell_type === "markdown");
      const raw = nb.cells.find((c: { cell_type: string }) => c.cell_type === "raw");
      assert.deepEqual(md.attachments, original.cells[1].attachments, JSON.stringify(step));
      assert.deepEqual(raw.attachments, original.cells[2].attachments, JSON.stringify(step));
      await assertValid(path);
    }
    const nb = await readJson(path);
    assert.deepEqual(nb.cells[0].metadata, { tags: ["keep"] });
    assert.deepEqual(nb.cells[1].metadata, { tags: ["t"] });
  });
});
