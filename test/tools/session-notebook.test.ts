/**
 * The python session as a notebook (docs/python-tool.md, "The session as a notebook"), through the
 * tool object on real kernels: cells of several calls (print, a display, a result, a matplotlib
 * figure, an error, a reset) exported with export_notebook; the file checked by the oracles
 * (nbformat.validate, and nbclient re-running it gives the same outputs after normalisation); the
 * texts the model reads for the export and for bad targets (nothing written then).
 */
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { PythonToolDetails } from "../../src/tools/python/result.js";
import type { ToolResult } from "../../src/tools/types.js";
import { NBCLIENT_RUN, normalized, python, validate } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-session-nb-"));
const cwd = join(root, "work");
mkdirSync(cwd);
after(() => rmSync(root, { recursive: true, force: true }));

const text = (r: ToolResult<PythonToolDetails>) => (r.content[0] as { text: string }).text;

/** A notebook's code cells in normal form without execution counts (a re-run numbers them anew). */
async function comparable(path: string) {
  const { cells } = (await normalized(path)) as {
    cells: { cell_type: string; source: string; outputs?: Record<string, unknown>[] }[];
  };
  return cells
    .filter((c) => c.cell_type === "code")
    .map((c) => ({
      source: c.source,
      outputs: (c.outputs ?? []).map((o) => {
        const { execution_count: _, ...rest } = o;
        const data = rest.data as Record<string, unknown> | undefined;
        if (data?.["image/png"]) data["image/png"] = "<png>";
        if (rest.output_type === "error") rest.traceback = "<traceback>";
        return rest;
      }),
    }));
}

describe("export_notebook", () => {
  let rt: Runtime;
  let tool: ReturnType<typeof createPythonTool>;
  const call = (params: unknown) => tool.execute("t", params as PythonParams);
  before(() => {
    rt = createRuntime({ settings: testSettings(), stateRoot: join(root, "state") });
    tool = createPythonTool({ cwd, runtime: rt });
  });
  after(() => rt.dispose());

  test("every cell the session ran, with outputs, a reset marked; valid; nbclient re-runs it alike", async () => {
    const first = await call({
      cells: [
        { code: "print('hello')\nx = 20" },
        { code: "from IPython.display import display, Markdown\ndisplay(Markdown('**bold**'))" },
        { code: "x + 1" },
        {
          code: "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
        },
      ],
    });
    assert.equal(first.isError, undefined, text(first));
    const failed = await call({ cells: [{ code: "import sys\nprint('to stderr', file=sys.stderr)\n1/0" }] });
    assert.equal(failed.isError, true);
    // A call that runs a cell and exports in one go: the notebook has this call's cell too.
    const out = join(cwd, "session.ipynb");
    const r = await call({
      reset: true,
      cells: [{ code: "y = 3\ny * 2" }],
      export_notebook: "session.ipynb",
    });
    assert.equal(r.isError, undefined, text(r));
    assert.equal(
      text(r),
      "6\nExported this session's 6 cells to session.ipynb (with their outputs). The kernel's state was lost once; a markdown cell marks where.",
    );
    assert.equal(await validate(out), "ok");
    const nb = JSON.parse(readFileSync(out, "utf8"));
    assert.deepEqual(
      nb.cells.map((c: { cell_type: string; execution_count?: number | null }) =>
        c.cell_type === "code" ? c.execution_count : c.cell_type,
      ),
      [1, 2, 3, 4, 5, "markdown", 1],
    );
    assert.match(
      nb.cells[5].source.join(""),
      /^\*\*Kernel restarted here \(reset\)\*\*: state from the cells above/,
    );
    assert.equal(nb.metadata.kernelspec.name, "python3");
    assert.equal(nb.metadata.language_info.name, "python");
    assert.match(nb.metadata.language_info.version, /^3\./);
    const kinds = nb.cells
      .filter((c: { cell_type: string }) => c.cell_type === "code")
      .map((c: { outputs: { output_type: string; name?: string }[] }) =>
        c.outputs.map((o) => o.name ?? o.output_type).join(","),
      );
    assert.deepEqual(kinds, [
      "stdout",
      "display_data",
      "execute_result",
      "display_data",
      "stderr,error",
      "execute_result",
    ]);
    assert.ok(nb.cells[3].outputs[0].data["image/png"], "the figure is saved as a PNG");

    // The oracle: nbclient runs the exported notebook from the top; the outputs are the same.
    const rerun = join(root, "rerun");
    await python([NBCLIENT_RUN, "-o", rerun, "--cwd", cwd, out]);
    assert.deepEqual(await comparable(join(rerun, "session.ipynb")), await comparable(out));
  });

  test("a call with only export_notebook runs nothing; bad targets say Error: and write nothing", async () => {
    await call({ cells: [{ code: "z = 1" }] });
    const only = await call({ export_notebook: join(cwd, "again.ipynb") });
    assert.equal(only.isError, undefined, text(only));
    assert.match(text(only), /^Exported this session's \d+ cells to .*again\.ipynb \(with their outputs\)\./);
    assert.equal(await validate(join(cwd, "again.ipynb")), "ok");

    writeFileSync(join(cwd, "taken.ipynb"), "keep me");
    const before = readdirSync(cwd).sort();
    const cases: [unknown, string][] = [
      [
        { export_notebook: "taken.ipynb" },
        "Error: cannot export to taken.ipynb: it already exists, and an export never replaces a file. Nothing was written; pass a new path.",
      ],
      [
        { cells: [{ code: "ran = True" }], export_notebook: "no/such/dir/x.ipynb" },
        "Error: cannot export to no/such/dir/x.ipynb: its folder no/such/dir does not exist. Nothing was written; create the folder first. No cell ran.",
      ],
      [
        { export_notebook: "notes.txt" },
        "Error: cannot export to notes.txt: the path must end in .ipynb. Nothing was written.",
      ],
      [{}, 'Error: cells is required (unless export_notebook is given). Pass {"cells":[{"code":"..."}]}.'],
    ];
    for (const [params, expected] of cases) {
      const r = await call(params);
      assert.equal(r.isError, true);
      assert.equal(text(r), expected);
    }
    assert.deepEqual(readdirSync(cwd).sort(), before);
    assert.equal(readFileSync(join(cwd, "taken.ipynb"), "utf8"), "keep me");
    assert.equal(text(await call({ cells: [{ code: "'ran' in dir()" }] })), "False");
  });

  test("a cell that kills the kernel and a too large output are marked in the notebook", async () => {
    const s = "deaths";
    await call({ session: s, cells: [{ code: "a = 1" }] });
    const died = await call({ session: s, cells: [{ code: "import os\nos._exit(1)" }] });
    assert.equal(died.isError, true);
    const big = await call({
      session: s,
      cells: [{ code: "print('x' * (5 * 2**20))" }, { code: "print('after')" }],
      export_notebook: "deaths.ipynb",
    });
    const artifact = /artifact:\/\/[\w-]+/.exec(text(big))?.[0];
    assert.ok(artifact, text(big));
    assert.match(
      text(big),
      /\nExported this session's 4 cells to deaths\.ipynb \(with their outputs\)\. The kernel's state was lost once; a markdown cell marks where\. Left out: the outputs of cell 3 \(too large; a markdown cell says so\)\.$/,
    );
    const path = join(cwd, "deaths.ipynb");
    assert.equal(await validate(path), "ok");
    const nb = JSON.parse(readFileSync(path, "utf8"));
    const cells = nb.cells.map((c: { cell_type: string; source: string[] }) => [
      c.cell_type,
      c.source.join(""),
    ]);
    assert.deepEqual(cells, [
      ["code", "a = 1"],
      ["code", "import os\nos._exit(1)"],
      [
        "markdown",
        cells[2][1].startsWith("**The kernel died while the cell above ran** (")
          ? cells[2][1]
          : "**The kernel died while the cell above ran** (…) and was restarted: …",
      ],
      ["code", "print('x' * (5 * 2**20))"],
      [
        "markdown",
        `*The outputs of the cell above (5.0 MB) are not saved here: over the 4.0 MB one cell's outputs may take in the record. Its text output is in ${artifact} (nbagent artifact).*`,
      ],
      ["code", "print('after')"],
    ]);
    assert.match(
      cells[2][1],
      /\) and was restarted: state from the cells above \(variables, imports\) is gone from here on\.$/,
    );
    assert.deepEqual(nb.cells[3].outputs, []);
    assert.deepEqual(nb.cells[5].outputs, [{ name: "stdout", output_type: "stream", text: ["after\n"] }]);
  });

  test("a new session has nothing to export; a per-call export holds that call's cells only", async () => {
    const none = await call({ session: "fresh", export_notebook: "fresh.ipynb" });
    assert.equal(
      text(none),
      "Error: nothing to export: this session (fresh) has run no cells. Nothing was written.",
    );
    assert.equal(existsSync(join(cwd, "fresh.ipynb")), false);
    const bare = await call({ mode: "per-call", export_notebook: "once.ipynb" });
    assert.equal(
      text(bare),
      "Error: nothing to export: a per-call kernel ends with its call, so its export holds that call's cells; pass cells with export_notebook. Nothing was written.",
    );
    const r = await call({ mode: "per-call", cells: [{ code: "print(7)" }], export_notebook: "once.ipynb" });
    assert.equal(text(r), "7\nExported this session's 1 cell to once.ipynb (with their outputs).");
    const nb = JSON.parse(readFileSync(join(cwd, "once.ipynb"), "utf8"));
    assert.deepEqual(
      nb.cells.map((c: { source: string[] }) => c.source.join("")),
      ["print(7)"],
    );
  });
});
