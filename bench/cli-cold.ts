/**
 * `nbagent call python` cold: a new process to the first result (node start, kernel start, init, one
 * trivial cell, shutdown excluded from neither), next to jupyter_client's kernel start to first result.
 * Uses the built CLI (dist/), as a user runs it.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
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

export async function run_(): Promise<BenchSection> {
  if (!existsSync("dist/cli/nbagent.js")) throw new Error("build first: npm run build");
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
    ],
    notes: [
      "5 alternating runs each; medians. Result = the JSON line on stdout; exit includes the kernel's shutdown.",
    ],
  };
}
export { run_ as run };

if (import.meta.url === `file://${process.argv[1]}`)
  run_().then((s) => console.log(JSON.stringify(s, null, 2)));
