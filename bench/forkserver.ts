/**
 * Kernel start → first result with and without the pre-warmed fork server (medians of --starts):
 *  - normal: a fresh backend per start, fork server off (every start imports ipykernel);
 *  - a lone start with the fork server on (default): a fresh backend per start — no server is
 *    started for a single kernel, so this should equal normal;
 *  - a start right after prewarm(): the server warms up in parallel with the normal start (what a
 *    caller that asks for it early pays for its first kernel);
 *  - forked: one backend whose server is ready, sequential starts (each kernel shut down after).
 * Usage: node --import tsx bench/forkserver.ts [--starts 5]
 */
import { pathToFileURL } from "node:url";
import { createLocalBackend, type LocalBackend } from "../src/kernel/index.js";
import { arg, type BenchSection, median, row } from "./types.js";

async function startToResult(backend: LocalBackend): Promise<{ ms: number; pid?: number }> {
  const t0 = performance.now();
  const kernel = await backend.startKernel({});
  await kernel.execute("1+1");
  const ms = performance.now() - t0;
  const pid = kernel.pid;
  await kernel.shutdown();
  return { ms, pid };
}

async function fresh(forkServer: boolean, prewarm = false): Promise<number> {
  const backend = createLocalBackend({ forkServer });
  try {
    if (prewarm) {
      // the server warming in parallel with a normal start (prewarm marks the kind as seen, so
      // startKernel would wait for the server; start the normal way while it warms)
      void backend.prewarm();
      const off = createLocalBackend({ forkServer: false });
      try {
        return (await startToResult(off)).ms;
      } finally {
        await off.dispose();
      }
    }
    return (await startToResult(backend)).ms;
  } finally {
    await backend.dispose();
  }
}

export async function run(): Promise<BenchSection> {
  const starts = arg("starts", 5);
  await fresh(false); // interpreter discovery and disk caches, outside the figures
  const normal: number[] = [];
  const lone: number[] = [];
  const warming: number[] = [];
  for (let i = 0; i < starts; i++) {
    normal.push(await fresh(false));
    lone.push(await fresh(true));
    warming.push(await fresh(true, true));
  }
  const backend = createLocalBackend({ forkServer: true });
  const forked: number[] = [];
  try {
    await startToResult(backend); // starts the server warming
    await startToResult(backend); // waits for it: forked from here on
    for (let i = 0; i < starts; i++) forked.push((await startToResult(backend)).ms);
  } finally {
    await backend.dispose();
  }
  const ref = median(normal);
  return {
    title: "kernel start → first result: pre-warmed fork server vs normal launch",
    rows: [
      row("forked start (server ready)", median(forked), ref, "ms", "≤ 0.3×"),
      row("lone start, fork server on (no server for one kernel)", median(lone), ref, "ms", "≤ 1.05×"),
      row("normal start while a server warms in parallel", median(warming), ref, "ms", "info"),
    ],
    notes: [
      `normal starts (ms): ${normal.map((x) => x.toFixed(0)).join(", ")}`,
      `forked starts (ms): ${forked.map((x) => x.toFixed(0)).join(", ")}`,
      `lone starts, fork server on (ms): ${lone.map((x) => x.toFixed(0)).join(", ")}`,
      `normal starts while a server warms (ms): ${warming.map((x) => x.toFixed(0)).join(", ")}`,
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await run(), null, 2));
}
