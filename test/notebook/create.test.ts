/**
 * Item 12 of issue 8: insert at cell_index 0 into a missing .ipynb path creates the notebook — valid
 * nbformat 4.5 (nbformat.validate), cell ids, kernelspec and language_info of the kernel it will run
 * in — and the text says so. Anything else on a missing path keeps "Notebook not found" and creates
 * nothing. Through the tool object, a real runtime (its kernelspec), and `nbagent batch` on a kernel.
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createToolbox } from "../../src/tools/index.js";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";
import { batch, resultText } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { call, Oracle, PYTHON, readJson, tempDir, text } from "./helpers.js";

let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

describe("insert into a missing path creates the notebook", () => {
  test("a valid nbformat 4.5 notebook with the new cell, its id, kernelspec and language_info", async () => {
    const dir = await tempDir();
    const r = await call(dir, {
      action: "insert",
      notebook_path: "new.ipynb",
      cell_index: 0,
      content: "# Analysis",
      cell_type: "markdown",
    });
    assert.equal(r.isError, undefined, text(r));
    const nb = await readJson(join(dir, "new.ipynb"));
    const id = nb.cells[0].id;
    assert.match(id, /^[0-9a-f]{8}$/);
    assert.equal(
      text(r),
      `Created new.ipynb (nbformat 4.5, kernel python3: Python 3 (ipykernel)). Inserted markdown cell at position 0 (id ${id}). Notebook now has 1 cell.`,
    );
    assert.equal(r.details.created, true);
    assert.equal(r.details.cellId, id);
    assert.equal(nb.nbformat, 4);
    assert.equal(nb.nbformat_minor, 5);
    assert.deepEqual(nb.metadata.kernelspec, {
      display_name: "Python 3 (ipykernel)",
      language: "python",
      name: "python3",
    });
    assert.equal(nb.metadata.language_info.name, "python");
    assert.deepEqual(nb.cells[0].source, ["# Analysis"]);
    const v = await oracle.check(join(dir, "new.ipynb"));
    assert.ok(v.valid, v.error ?? "");
    assert.ok(v.canonical, "written as nbformat.write would");
    // The next insert is an ordinary one.
    const second = await call(dir, {
      action: "insert",
      notebook_path: "new.ipynb",
      cell_index: 1,
      content: "x = 1",
    });
    assert.match(
      text(second),
      /^Inserted code cell at position 1 \(id [0-9a-f]{8}\)\. Notebook now has 2 cells\.$/,
    );
  });

  test("refused, creating nothing: other actions, cell_index > 0, cell_id, not .ipynb, no folder", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "file"), "not a folder");
    const cases: [Record<string, unknown>, string][] = [
      [
        { action: "edit", notebook_path: "a.ipynb", cell_index: 0, content: "x" },
        `Error: Notebook not found: a.ipynb. Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "read", notebook_path: "a.ipynb" },
        `Error: Notebook not found: a.ipynb. Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "delete", notebook_path: "a.ipynb", cell_index: 0 },
        `Error: Notebook not found: a.ipynb. Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "clear_outputs", notebook_path: "a.ipynb" },
        `Error: Notebook not found: a.ipynb. Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "insert", notebook_path: "a.ipynb", cell_index: 1, content: "x" },
        `Error: Notebook not found: a.ipynb. To create it, insert at cell_index 0 (not cell_index 1). Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "insert", notebook_path: "a.ipynb", cell_id: "abc", content: "x" },
        `Error: Notebook not found: a.ipynb. To create it, insert at cell_index 0 (not cell_id "abc"). Full path: ${dir}/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "insert", notebook_path: "a.py", cell_index: 0, content: "x" },
        `Error: Notebook not found: a.py. Only a path ending in .ipynb is created by insert. Full path: ${dir}/a.py (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "insert", notebook_path: "sub/a.ipynb", cell_index: 0, content: "x" },
        `Error: Cannot create notebook sub/a.ipynb: its folder sub does not exist. Nothing was created; create the folder first (for example with the python tool). Full path: ${dir}/sub/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
      [
        { action: "insert", notebook_path: "file/a.ipynb", cell_index: 0, content: "x" },
        `Error: Cannot create notebook file/a.ipynb: file is not a folder. Nothing was created; create the folder first (for example with the python tool). Full path: ${dir}/file/a.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      ],
    ];
    for (const [params, expected] of cases) {
      const r = await call(dir, params);
      assert.equal(r.isError, true, expected);
      assert.equal(text(r), expected);
    }
    assert.deepEqual(await readdir(dir), ["file"]);
  });

  test("two creates at once: one creates, the other is refused; nothing is overwritten", async () => {
    const dir = await tempDir();
    const tool = createNotebookTool({ cwd: dir });
    const results = await Promise.all(
      ["first", "second", "third"].map((content) =>
        tool.execute("t", { action: "insert", notebook_path: "race.ipynb", cell_index: 0, content }),
      ),
    );
    const created = results.filter((r) => r.details.created);
    assert.ok(created.length >= 1);
    const nb = await readJson(join(dir, "race.ipynb"));
    // Each call either created the file, inserted into it, or was refused; no cell was lost silently.
    const inserted = results.filter((r) => !r.isError).length;
    assert.equal(nb.cells.length, inserted);
    for (const r of results.filter((x) => x.isError)) {
      assert.match(
        text(r),
        /^Error: Cannot create notebook race\.ipynb: something appeared at that path meanwhile/,
      );
    }
    assert.deepEqual((await readdir(dir)).sort(), ["race.ipynb"], "no temp file left");
    assert.ok((await oracle.check(join(dir, "race.ipynb"))).valid);
  });

  test("the kernelspec is the runtime's kernel, and the new notebook runs in it", async () => {
    const dir = await tempDir();
    const kernels = join(dir, "jupyter", "kernels", "nbagent-test-py");
    await mkdir(kernels, { recursive: true });
    await writeFile(
      join(kernels, "kernel.json"),
      JSON.stringify({
        argv: [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        display_name: "Test Python (nbagent)",
        language: "python",
      }),
    );
    const toolbox = createToolbox({
      settings: testSettings({ ...process.env, JUPYTER_PATH: join(dir, "jupyter") }),
      cwd: dir,
      runtime: { kernelName: "nbagent-test-py" },
    });
    try {
      const tool = toolbox.tools.find((t) => t.name === "notebook")!;
      const r = await tool.execute("t", {
        action: "insert",
        notebook_path: "k.ipynb",
        cell_index: 0,
        content: "import sys; print('ran in', sys.executable)",
        execute: true,
      });
      const all = r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
      assert.equal(r.isError, undefined, all);
      assert.match(
        all,
        /^Created k\.ipynb \(nbformat 4\.5, kernel nbagent-test-py: Test Python \(nbagent\)\)\./,
      );
      assert.match(all, /ran in /);
      const nb = await readJson(join(dir, "k.ipynb"));
      assert.deepEqual(nb.metadata.kernelspec, {
        display_name: "Test Python (nbagent)",
        language: "python",
        name: "nbagent-test-py",
      });
      assert.match(nb.metadata.language_info.version, /^3\./, "the run recorded the kernel's language_info");
      assert.equal(nb.cells[0].execution_count, 1);
      assert.ok((await oracle.check(join(dir, "k.ipynb"))).valid);
    } finally {
      await toolbox.dispose();
    }
  });

  test("through nbagent batch: create with execute, then run it again and read it", async () => {
    const dir = await tempDir();
    const { results, code, stderr } = await batch(dir, [
      {
        tool: "notebook",
        params: {
          action: "insert",
          notebook_path: "flow.ipynb",
          cell_index: 0,
          content: "total = sum(range(5))\nprint('total', total)",
          execute: true,
        },
      },
      {
        tool: "notebook",
        params: { action: "insert", notebook_path: "flow.ipynb", cell_index: 1, content: "total * 2" },
      },
      { tool: "notebook", params: { action: "run", notebook_path: "flow.ipynb", cell_index: 1 } },
    ]);
    assert.equal(code, 0, stderr);
    assert.match(
      resultText(results[0]),
      /^Created flow\.ipynb \(nbformat 4\.5, kernel python3: Python 3 \(ipykernel\)\)\. Inserted code cell at position 0 \(id [0-9a-f]{8}\)\. Notebook now has 1 cell\./,
    );
    assert.match(resultText(results[0]), /total 10/);
    assert.match(resultText(results[2]), /20/);
    const nb = await readJson(join(dir, "flow.ipynb"));
    assert.deepEqual(nb.cells[1].outputs[0].data["text/plain"], ["20"]);
    assert.ok((await oracle.check(join(dir, "flow.ipynb"))).valid);
    assert.equal(JSON.parse(await readFile(join(dir, "flow.ipynb"), "utf8")).nbformat_minor, 5);
  });
});
