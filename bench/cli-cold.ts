/**
 * `nbagent call python` cold: a new process to the first result (node start, kernel start, init, one
 * trivial cell, shutdown excluded from neither), next to jupyter_client's kernel start to first result.
 * And the CLI's own start against its floors: `nbagent --version` vs `node -e 0`, and `nbagent
 * notebook read` of a small notebook (piped) vs Python's `nbformat.read` of it.
 * Uses the built CLI (dist/), as a user runs it.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findInterpreter } from "../src/kernel/interpreter.js";
import { jupyterClientBench } from "./anchors.js";
import { type BenchSection, median, row } from "./types.js";

/** One cold call: ms until the result line is printed, and until the process has exited (kernel shut down). */
function coldCall(): Promise<{ result: number; exit: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let result = 0;
    let out = "";
    const child = spawn(process.execPath, [
      "dist/cli/nbagent.js",
      "call",
      "python",
      JSON.stringify({ cells: [{ code: "1+1" }] }),
      "--json",
    ]);
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      if (!result && out.includes("\n")) result = performance.now() - t0;
    });
    child.on("error", reject);
    child.on("exit", () => {
      const exit = performance.now() - t0;
      try {
        if (!JSON.parse(out).content[0].text.includes("2")) throw new Error("wrong answer");
        resolve({ result, exit });
      } catch (err) {
        reject(new Error(`unexpected result (${(err as Error).message}): ${out}`));
      }
    });
  });
}

/** Wall ms of one process run to its exit (output discarded); throws when it fails. */
function processMs(command: string, args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(command, args, { stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${r.stderr}`);
  return ms;
}

/** `nbagent --version` vs `node -e 0`, and `notebook read` vs nbformat.read: interleaved, medians. */
async function startRows(runs = 21) {
  const python = (await findInterpreter()).path;
  const dir = mkdtempSync(join(tmpdir(), "nbagent-bench-cli-"));
  try {
    const nb = join(dir, "small.ipynb");
    const make =
      "import sys, nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_output\n" +
      "cells = [new_markdown_cell('# A small notebook')] + [new_code_cell(f'x = {i}\\nprint(x)', execution_count=i + 1, " +
      "outputs=[new_output('stream', name='stdout', text=f'{i}\\n')]) for i in range(10)]\n" +
      "nbformat.write(new_notebook(cells=cells), sys.argv[1])\n";
    processMs(python, ["-c", make, nb]);
    const cli = "dist/cli/nbagent.js";
    const read = "import sys, nbformat\nnbformat.read(sys.argv[1], as_version=4)";
    // The reference edit: read, change one cell's source, write (nbformat validates on both).
    const edit =
      "import sys, nbformat\nnb = nbformat.read(sys.argv[1], as_version=4)\n" +
      "nb.cells[1].source = sys.argv[2]\nnbformat.write(nb, sys.argv[1])";
    const editNb = join(dir, "edit.ipynb");
    const editRef = join(dir, "edit-ref.ipynb");
    processMs(python, ["-c", make, editNb]);
    processMs(python, ["-c", make, editRef]);
    const callRead = JSON.stringify({ action: "read", notebook_path: nb });
    let n = 0;
    const callEdit = () =>
      JSON.stringify({ action: "edit", notebook_path: editNb, cell_index: 1, content: `x = ${++n}` });
    const t = {
      version: [] as number[],
      node: [] as number[],
      read: [] as number[],
      nbformat: [] as number[],
      callRead: [] as number[],
      callEdit: [] as number[],
      nbformatEdit: [] as number[],
    };
    for (let i = 0; i < runs; i++) {
      const steps: [keyof typeof t, () => number][] = [
        ["version", () => processMs(process.execPath, [cli, "--version"])],
        ["node", () => processMs(process.execPath, ["-e", "0"])],
        ["read", () => processMs(process.execPath, [cli, "notebook", "read", nb])],
        ["nbformat", () => processMs(python, ["-c", read, nb])],
        ["callRead", () => processMs(process.execPath, [cli, "call", "notebook", callRead])],
        ["callEdit", () => processMs(process.execPath, [cli, "call", "notebook", callEdit()])],
        ["nbformatEdit", () => processMs(python, ["-c", edit, editRef, `x = ${i}`])],
      ];
      if (i % 2) steps.reverse();
      for (const [key, step] of steps) t[key].push(step());
    }
    return [
      row("nbagent --version vs node -e 0", median(t.version), median(t.node), "ms", "≤ 1.15×"),
      row(
        "nbagent notebook read (small, piped) vs nbformat.read",
        median(t.read),
        median(t.nbformat),
        "ms",
        "≤ 0.9×",
      ),
      row(
        "nbagent call notebook read (small) vs nbformat.read",
        median(t.callRead),
        median(t.nbformat),
        "ms",
        "≤ 0.6×",
      ),
      row(
        "nbagent call notebook edit (small) vs nbformat read+write",
        median(t.callEdit),
        median(t.nbformatEdit),
        "ms",
        "≤ 0.7×",
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run_(): Promise<BenchSection> {
  if (!existsSync("dist/cli/nbagent.js")) throw new Error("build first: npm run build");
  const start = await startRows();
  const ours: number[] = [];
  const exits: number[] = [];
  const ref: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = await coldCall();
    ours.push(t.result);
    exits.push(t.exit);
    ref.push((await jupyterClientBench(["--execs", "1", "--lines", "1"])).kernel_start_first_result_ms);
  }
  return {
    title: "CLI cold start (nbagent call python, new process → result)",
    rows: [
      row("cold call → result vs kernel start→first result", median(ours), median(ref), "ms", "≤ 1.3×"),
      row("… → process exit (kernel shut down)", median(exits), median(ref), "ms", "info"),
      ...start,
    ],
    notes: [
      "5 alternating runs each; medians. Result = the JSON line on stdout; exit includes the kernel's shutdown.",
      "--version, notebook read and the call rows: 21 interleaved runs of each command to its exit; medians. The reference read is `python -c 'import nbformat; nbformat.read(path, as_version=4)'` (it validates, as nbagent's read does); the reference edit reads, sets one cell's source and writes with nbformat (validating both ways, as nbagent's edit checks the file and writes it atomically).",
    ],
  };
}
export { run_ as run };

if (import.meta.url === `file://${process.argv[1]}`)
  run_().then((s) => console.log(JSON.stringify(s, null, 2)));
