/**
 * Runs the real tools (createToolbox, real kernels, real files) once per case and saves each call's
 * arguments and result — and a progress update taken while a cell ran — as JSON fixtures for the
 * render snapshot tests (test/render/fixtures/*.json). The temporary directory is written as
 * /work/demo so the fixtures do not depend on the machine.
 *   npx tsx scripts/make-render-fixtures.ts   (then NBAGENT_UPDATE_SNAPSHOTS=1 npm test -- test/render)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AnyTool, createToolbox } from "../src/tools/index.js";
import type { ToolResult } from "../src/tools/types.js";

const OUT = "test/render/fixtures";
const root = mkdtempSync(join(tmpdir(), "nbagent-render-fixtures-"));
const cwd = join(root, "work");
mkdirSync(cwd);
const box = createToolbox({
  settings: resolveSettings({}, process.env),
  cwd,
  runtime: { stateRoot: join(root, "state") },
  waitSeconds: 50,
});
const tool = (name: string) => box.tools.find((t) => t.name === name) as AnyTool;

function scrub(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replaceAll(cwd, "/work/demo").replaceAll(root, "/tmp/nbagent"));
}

interface Fixture {
  tool: string;
  args: unknown;
  result: ToolResult<unknown>;
  /** A progress update (onUpdate) taken while a cell was running, when the case has one. */
  partial?: ToolResult<unknown>;
}

async function record(
  name: string,
  toolName: string,
  args: unknown,
  wantPartial = false,
): Promise<ToolResult<unknown>> {
  let partial: ToolResult<unknown> | undefined;
  const onUpdate = (p: ToolResult<unknown>) => {
    const details = p.details as { cells?: { status: string; output?: { lines: number } }[] };
    const running = details?.cells?.find((c) => c.status === "running");
    // the last update with a running cell that has printed something
    if (running && (running.output?.lines ?? 0) > 0) partial = structuredClone(p);
  };
  const result = await tool(toolName).execute("fixture", args, undefined, wantPartial ? onUpdate : undefined);
  const fixture: Fixture = { tool: toolName, args, result };
  if (wantPartial && partial) fixture.partial = partial;
  writeFileSync(join(OUT, `${name}.json`), `${JSON.stringify(scrub(fixture), null, 2)}\n`);
  console.log(`${name}: ${result.isError ? "error" : "ok"}${fixture.partial ? " (+partial)" : ""}`);
  return result;
}

const JSON_CODE = `
from IPython.display import JSON, display
display(JSON({"model": "ridge", "alpha": 0.5, "scores": [0.91, 0.88, 0.93, 0.9, 0.87, 0.92, 0.89],
  "features": {f"f{i}": {"weight": round(i * 0.137, 3), "kept": i % 3 != 0} for i in range(14)},
  "notes": None, "ok": True}))
`;

const PLOT_CODE = `
%matplotlib inline
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(8, 6), dpi=80)
ax.plot([0, 1, 2, 3], [1, 4, 2, 5])
ax.set_title("trend")
plt.show()
`;

import { resolveSettings } from "../src/runtime/settings.js";

try {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  // python
  await record("python-one-cell", "python", {
    cells: [{ code: "import sys\nprint(sys.version_info[:2])\nx = 41\nx + 1" }],
  });
  await record("python-cells-error", "python", {
    cells: [
      { title: "load", code: "rows = [i * i for i in range(12)]\nfor r in rows:\n    print('row', r)" },
      { title: "divide", code: "def ratio(a, b):\n    return a / b\n\nratio(len(rows), 0)" },
      { title: "report", code: "print('never')" },
    ],
  });
  const long = await record("python-long-output", "python", {
    cells: [
      {
        title: "log",
        code: "for i in range(4000):\n    print(f'step {i:05d} loss={1/(i+1):.6f} ' + 'x' * 20)",
      },
    ],
  });
  await record("python-json", "python", { cells: [{ code: JSON_CODE.trim() }] });
  await record("python-image", "python", { cells: [{ title: "plot", code: PLOT_CODE.trim() }] });
  await record("python-status", "python", {
    cells: [
      {
        title: "train",
        code: "for epoch in range(1, 6):\n    status('epoch', n=epoch, of=5, loss=round(1 / epoch, 3))\nprint('trained')",
      },
    ],
  });
  await record("python-wide", "python", {
    cells: [
      {
        code: "print('名前: データ分析 — 日本語の行はとても長くなることがあります。全角文字は二列を使います。' * 2)\nprint('emoji 📊📈 ok ✅')\nprint('tab\\tseparated\\tcolumns')\nprint('a' * 300)",
      },
    ],
  });
  await record(
    "python-running",
    "python",
    {
      cells: [
        { title: "warm up", code: "print('ready')" },
        {
          title: "slow",
          code: "import time\nfor i in range(6):\n    print('tick', i, flush=True)\n    time.sleep(0.3)",
        },
        { title: "after", code: "print('done')" },
      ],
    },
    true,
  );
  await record("python-timeout", "python", {
    cells: [{ code: "import time\nprint('start', flush=True)\ntime.sleep(10)" }],
    timeout: 2,
  });
  await record("python-bad-params", "python", { cells: [] });

  // notebook
  await record("notebook-insert-create", "notebook", {
    action: "insert",
    notebook_path: "analysis.ipynb",
    cell_index: 0,
    cell_type: "markdown",
    content:
      "# Sales analysis\n\nLoads the **monthly** sales and plots the `trend`.\n\n- source: `sales.csv`\n- owner: data team",
  });
  await record("notebook-insert-code", "notebook", {
    action: "insert",
    notebook_path: "analysis.ipynb",
    cell_index: 1,
    content:
      "import math\n\nsales = [120, 135, 150, 149, 170, 182, 190, 201, 215]\ngrowth = [b / a - 1 for a, b in zip(sales, sales[1:])]\nprint(f'mean growth {sum(growth) / len(growth):.2%}')\nprint(max(sales))\nmath.sqrt(sales[-1])",
  });
  await record("notebook-insert-failing", "notebook", {
    action: "insert",
    notebook_path: "analysis.ipynb",
    cell_index: 2,
    content: "total = sum(sales)\nprint('total', total)\nundefined_name + 1",
  });
  await record("notebook-run-all", "notebook", { action: "run", notebook_path: "analysis.ipynb" });
  await record("notebook-edit-execute", "notebook", {
    action: "edit",
    notebook_path: "analysis.ipynb",
    cell_index: 2,
    content: "total = sum(sales)\nprint('total', total)",
    execute: true,
  });
  await record("notebook-read-page", "notebook", { action: "read", notebook_path: "analysis.ipynb" });
  await record("notebook-read-cell", "notebook", {
    action: "read",
    notebook_path: "analysis.ipynb",
    cell_index: 1,
  });
  await record("notebook-move", "notebook", {
    action: "move",
    notebook_path: "analysis.ipynb",
    cell_index: 2,
    to_index: 1,
  });
  await record("notebook-delete", "notebook", {
    action: "delete",
    notebook_path: "analysis.ipynb",
    cell_index: 1,
  });
  await record("notebook-clear", "notebook", { action: "clear_outputs", notebook_path: "analysis.ipynb" });
  await record("notebook-error-index", "notebook", {
    action: "edit",
    notebook_path: "analysis.ipynb",
    cell_index: 9,
    content: "x = 1",
  });
  await record("notebook-error-action", "notebook", { action: "updte", notebook_path: "analysis.ipynb" });

  // a notebook run that goes on after an (allowed) error, caught while its second cell runs
  await tool("notebook").execute("fixture", {
    action: "insert",
    notebook_path: "slow.ipynb",
    cell_index: 0,
    content: "raise ValueError('bad row 7')",
  });
  await tool("notebook").execute("fixture", {
    action: "insert",
    notebook_path: "slow.ipynb",
    cell_index: 1,
    content: "import time\nfor i in range(5):\n    print('chunk', i, flush=True)\n    time.sleep(0.3)",
  });
  await record(
    "notebook-run-allow-errors",
    "notebook",
    { action: "run", notebook_path: "slow.ipynb", allow_errors: true },
    true,
  );

  // artifact
  const id = (long.details as { output: { artifactId?: string } }).output.artifactId;
  await record("artifact-page", "artifact", { id: `artifact://${id}`, offset: 1990, limit: 12 });
  await record("artifact-search", "artifact", { id, pattern: "step 0399\\d" });
  await record("artifact-missing", "artifact", { id: "nope" });

  // runs: a call that outlives its wait, then its end
  const slow = await record("runs-started", "python", {
    cells: [
      { title: "sleepy", code: "import time\nprint('begin', flush=True)\ntime.sleep(2.5)\nprint('end')" },
    ],
    wait: 1,
  });
  const runId = (slow.details as { run?: { id: string } }).run?.id ?? "r1";
  await record("runs-wait", "runs", { run_id: runId, wait: 20 });
  await record("runs-unknown", "runs", { run_id: "r99" });
} finally {
  await box.dispose();
  rmSync(root, { recursive: true, force: true });
}
