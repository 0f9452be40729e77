/**
 * Kernel start → first result with and without the pre-warmed fork server (medians of --starts):
 *  - normal: a fresh backend per start, fork server off (every start imports ipykernel);
 *  - first start with the fork server on: a fresh backend per start, so the server warms up in
 *    parallel with this start (the cost a one-kernel process pays);
 *  - forked: one backend whose server is ready, sequential starts (each kernel shut down after).
 * Usage: node --import tsx bench/forkserver.ts [--starts 5]
 */
import { pathToFileURL } from "node:url";
import { createLocalBackend, type LocalBackend } from "../src/kernel/index.js";
import { type BenchSection, median, row } from "./types.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number(process.env[`NBAGENT_BENCH_${name.toUpperCase()}`]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

async function startToResult(backend: LocalBackend): Promise<{ ms: number; pid?: number }> {
  const t0 = performance.now();
  const kernel = await backend.startKernel({});
  await kernel.execute("1+1");
  const ms = performance.now() - t0;
  const pid = kernel.pid;
  await kernel.shutdown();
  return { ms, pid };
}

async function fresh(forkServer: boolean): Promise<number> {
  const backend = createLocalBackend({ forkServer });
  try {
    return (await startToResult(backend)).ms;
  } finally {
    await backend.dispose();
  }
}

export async function run(): Promise<BenchSection> {
  const starts = arg("starts", 5);
  await fresh(false); // interpreter discovery and disk caches, outside the figures
  const normal: number[] = [];
  const firstWithServer: number[] = [];
  for (let i = 0; i < starts; i++) {
    normal.push(await fresh(false));
    firstWithServer.push(await fresh(true));
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
      row("first start, server warming in parallel", median(firstWithServer), ref, "ms", "≤ 1.1×"),
    ],
    notes: [
      `normal starts (ms): ${normal.map((x) => x.toFixed(0)).join(", ")}`,
      `forked starts (ms): ${forked.map((x) => x.toFixed(0)).join(", ")}`,
      `first starts with the server warming (ms): ${firstWithServer.map((x) => x.toFixed(0)).join(", ")}`,
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await run(), null, 2));
}
