/**
 * Notebooks from other machines name kernelspecs that are not installed here ("conda-root-py",
 * ".venv"): a Python one runs with python3 and says so; anything else keeps its name and fails
 * with the list of installed ones. Through the real toolbox and kernels, and as a pure choice.
 */
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Notebook } from "../../src/notebook/index.js";
import { chooseNotebookKernel } from "../../src/runtime/notebook-session.js";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { tempDir } from "./helpers.js";

function notebook(kernelspec?: Record<string, string>, languageInfo?: Record<string, string>): Notebook {
  const metadata: Record<string, unknown> = {};
  if (kernelspec) metadata.kernelspec = kernelspec;
  if (languageInfo) metadata.language_info = languageInfo;
  return {
    cells: [
      {
        cell_type: "code",
        id: "c0",
        metadata: {},
        source: "import sys\nprint(6 * 7)",
        outputs: [],
        execution_count: null,
      },
    ],
    metadata,
    nbformat: 4,
    nbformat_minor: 5,
  } as unknown as Notebook;
}

describe("the kernel a notebook runs in", () => {
  const installed = async () => ["ir", "python3"];

  it("its own kernelspec when installed, python3 when it names none or python", async () => {
    assert.deepEqual(await chooseNotebookKernel(notebook({ name: "ir", language: "R" }), installed), {
      name: "ir",
    });
    assert.deepEqual(await chooseNotebookKernel(notebook(), installed), { name: "python3" });
    assert.deepEqual(await chooseNotebookKernel(notebook({ name: "python" }), installed), { name: "python" });
  });

  it("a Python notebook's missing kernelspec runs with python3, with a notice naming both", async () => {
    const byKernelspec = await chooseNotebookKernel(
      notebook({ name: "conda-root-py", language: "python", display_name: "Python [conda root]" }),
      installed,
    );
    assert.equal(byKernelspec.name, "python3");
    assert.match(
      byKernelspec.notice ?? "",
      /kernelspec "conda-root-py" is not installed here; it runs with python3/,
    );
    const byLanguageInfo = await chooseNotebookKernel(
      notebook({ name: ".venv" }, { name: "python" }),
      installed,
    );
    assert.equal(byLanguageInfo.name, "python3");
  });

  it("another language keeps its name (the start then fails with the installed names)", async () => {
    assert.deepEqual(
      await chooseNotebookKernel(notebook({ name: "julia-1.9", language: "julia" }), installed),
      {
        name: "julia-1.9",
      },
    );
  });

  describe("through the tools, on real kernels", () => {
    let dir: string;
    let box: Toolbox;
    before(async () => {
      dir = await tempDir();
      box = createToolbox({ settings: testSettings(), cwd: dir });
    });
    after(async () => {
      await box?.dispose();
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    const tool = (name: string) => box.tools.find((t) => t.name === name)!;

    it("run says which kernel ran it, writes the output, keeps the notebook's kernelspec", async () => {
      const path = join(dir, "conda.ipynb");
      const nb = notebook({ name: "conda-root-py", language: "python", display_name: "Python [conda root]" });
      await writeFile(path, `${JSON.stringify(nb, null, 1)}\n`);
      const r = await tool("notebook").execute("t", {
        action: "run",
        notebook_path: "conda.ipynb",
        all: true,
      });
      assert.equal(r.isError, undefined, JSON.stringify(r.content));
      const text = (r.content[0] as { text: string }).text;
      assert.match(text, /kernelspec "conda-root-py" is not installed here; it runs with python3/);
      const saved = JSON.parse(await readFile(path, "utf8"));
      assert.deepEqual(saved.cells[0].outputs[0].text, ["42\n"]);
      assert.equal(
        saved.metadata.kernelspec.name,
        "conda-root-py",
        "the file keeps its kernelspec, as nbclient",
      );
      // python + notebook_path reaches the same kernel (same choice, same session).
      const p = await tool("python").execute("t", {
        notebook_path: "conda.ipynb",
        cells: [{ code: "print('sys' in dir())" }],
      });
      assert.match((p.content[0] as { text: string }).text, /True/);
    });
  });
});
