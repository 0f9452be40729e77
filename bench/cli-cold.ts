/**
 * `nbagent call python` cold: a new process to the first result (node start, kernel start, init, one
 * trivial cell, shutdown excluded from neither), next to jupyter_client's kernel start to first result.
 * Uses the built CLI (dist/), as a user runs it.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { jupyterClientBench } from "./anchors.js";
import { type BenchSection, median, row } from "./types.js";

const run = promisify(execFile);

async function coldCall(): Promise<number> {
  const t0 = performance.now();
  const { stdout } = await run(process.execPath, [
    "dist/cli/main.js",
    "call",
    "python",
    JSON.stringify({ cells: [{ code: "1+1" }] }),
    "--json",
  ]);
  const ms = performance.now() - t0;
  if (!JSON.parse(stdout).content[0].text.includes("2")) throw new Error(`unexpected result: ${stdout}`);
  return ms;
}

export async function run_(): Promise<BenchSection> {
  if (!existsSync("dist/cli/main.js")) throw new Error("build first: npm run build");
  const ours: number[] = [];
  const ref: number[] = [];
  for (let i = 0; i < 5; i++) {
    ours.push(await coldCall());
    ref.push((await jupyterClientBench(["--execs", "1", "--lines", "1"])).kernel_start_first_result_ms);
  }
  return {
    title: "CLI cold start (nbagent call python, new process → result)",
    rows: [row("cold call vs kernel start→first result", median(ours), median(ref), "ms", "≤ 1.3×")],
    notes: ["5 alternating runs each; medians"],
  };
}
export { run_ as run };

if (import.meta.url === `file://${process.argv[1]}`)
  run_().then((s) => console.log(JSON.stringify(s, null, 2)));
