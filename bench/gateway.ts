/**
 * Gateway backend vs local backend: back-to-back trivial executes (reply + idle) on one kernel each,
 * in alternating rounds (default 5; medians), against a jupyter_server started here with a token.
 * Goal: the gateway within 2× of local.
 * Usage: node --import tsx bench/gateway.ts [--execs 200] [--rounds 5]
 */
import { pathToFileURL } from "node:url";
import { createLocalBackend, GatewayBackend, type KernelBackend } from "../src/kernel/index.js";
import { startJupyterServer } from "../test/gateway/helpers.js";
import { type BenchSection, median, row } from "./types.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number(process.env[`NBAGENT_BENCH_${name.toUpperCase()}`]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

async function round(backend: KernelBackend, execs: number): Promise<number> {
  const kernel = await backend.startKernel({});
  for (let i = 0; i < 10; i++) await kernel.execute("1+1");
  const lat: number[] = [];
  for (let i = 0; i < execs; i++) {
    const s = performance.now();
    await kernel.execute("1+1");
    lat.push(performance.now() - s);
  }
  await backend.dispose();
  return median(lat);
}

export async function run(): Promise<BenchSection> {
  const execs = arg("execs", 200);
  const rounds = arg("rounds", 5);
  const server = await startJupyterServer();
  const gateway: number[] = [];
  const local: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const g = () => round(new GatewayBackend({ url: server.url, token: server.token }), execs);
      const l = () => round(createLocalBackend({ forkServer: false }), execs);
      if (i % 2 === 0) {
        gateway.push(await g());
        local.push(await l());
      } else {
        local.push(await l());
        gateway.push(await g());
      }
    }
  } finally {
    await server.stop();
  }
  return {
    title: "gateway backend (jupyter_server, binary WebSocket) vs local backend",
    rows: [row("trivial execute round trip (median)", median(gateway), median(local), "ms", "≤ 2.0×")],
    notes: [
      `rounds: gateway ${gateway.map((x) => x.toFixed(2)).join(", ")}; local ${local
        .map((x) => x.toFixed(2))
        .join(", ")} (ms)`,
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const s = await run();
  for (const r of s.rows)
    console.log(
      `${r.name}: gateway ${r.ours.toFixed(2)} ms, local ${r.reference.toFixed(2)} ms, ${r.ratio.toFixed(2)}× (${r.goal})`,
    );
  for (const n of s.notes ?? []) console.log(`  - ${n}`);
}
