/**
 * Gateway backends, side by side in one run:
 *  - back-to-back trivial executes (reply + idle) on one kernel each, gateway backend (a
 *    jupyter_server started here with a token) vs local backend, in alternating rounds (default 5;
 *    medians). Goal: the gateway within 2× of local.
 *  - a warm named-session call: a new `nbagent call python … --session NAME` process that attaches
 *    to the session's kernel on the shared local gateway, runs `x + 1`, prints 42 and exits, vs a new
 *    Python process that attaches to the same kernel with jupyter_client's BlockingKernelClient by
 *    its connection file (bench/reference/attach_execute.py) and runs the same cell, in alternating
 *    pairs (default 15; medians). Goal ≤ 1.0×. A private state directory keeps the user's own
 *    gateway and sessions out of it.
 * Usage: node --import tsx bench/gateway.ts [--execs 200] [--rounds 5] [--calls 15]
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { gatewayDir, stopLocalGateway } from "../src/kernel/gateway/local-server.js";
import {
  createLocalBackend,
  findInterpreter,
  GatewayBackend,
  type KernelBackend,
} from "../src/kernel/index.js";
import { startJupyterServer } from "../test/gateway/helpers.js";
import { arg, type BenchSection, median, row } from "./types.js";

const exec = promisify(execFile);

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

async function timed(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<[number, string]> {
  const s = performance.now();
  const { stdout } = await exec(file, args, { env, maxBuffer: 1 << 20, timeout: 120_000 });
  return [performance.now() - s, stdout];
}

/** Warm named-session calls (new process → result → exit): ours and the reference, alternating. */
async function namedSessionCalls(calls: number): Promise<{ ours: number[]; refs: number[] }> {
  const cli = resolve("dist/cli/nbagent.js");
  if (!existsSync(cli)) throw new Error("dist/cli/nbagent.js is missing: run `npm run build` first");
  const python = (await findInterpreter()).path;
  const stateRoot = mkdtempSync(join(tmpdir(), "nbagent-bench-gw-"));
  const env = { ...process.env, NBAGENT_STATE_DIR: stateRoot };
  const call = (code: string) =>
    timed(
      process.execPath,
      [cli, "call", "python", JSON.stringify({ cells: [{ code }] }), "--session", "bench"],
      env,
    );
  try {
    const [, first] = await call("x = 41");
    if (/Error/.test(first)) throw new Error(`the named session did not start: ${first}`);
    const { stdout: listed } = await exec(process.execPath, [cli, "sessions", "--json"], { env });
    const kernelId = (JSON.parse(listed) as { name: string; kernelId: string }[]).find(
      (s) => s.name === "bench",
    )?.kernelId;
    if (!kernelId) throw new Error(`session "bench" not listed: ${listed}`);
    const connectionFile = join(gatewayDir(stateRoot, python), "runtime", `kernel-${kernelId}.json`);
    const reference = resolve("bench/reference/attach_execute.py");
    const ours: number[] = [];
    const refs: number[] = [];
    for (let i = 0; i < calls; i++) {
      const pair = [
        async () => {
          const [t, out] = await call("x + 1");
          if (!/^42$/m.test(out)) throw new Error(`a warm call did not print 42: ${out}`);
          ours.push(t);
        },
        async () => {
          const [t, out] = await timed(python, [reference, connectionFile, "x + 1"], env);
          if (!/^42$/m.test(out)) throw new Error(`the reference did not print 42: ${out}`);
          refs.push(t);
        },
      ];
      if (i % 2) pair.reverse();
      for (const side of pair) await side();
    }
    return { ours, refs };
  } finally {
    await stopLocalGateway({ python, stateRoot }).catch(() => false);
    rmSync(stateRoot, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchSection> {
  const execs = arg("execs", 200);
  const calls = arg("calls", 15);
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
  const named = await namedSessionCalls(calls);
  const ms = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
  return {
    title: "gateway backend (jupyter_server, binary WebSocket) vs local backend and jupyter_client",
    rows: [
      row("trivial execute round trip: gateway vs local", median(gateway), median(local), "ms", "≤ 2.0×"),
      row(
        "warm named-session call (new process → 42)",
        median(named.ours),
        median(named.refs),
        "ms",
        "≤ 1.0×",
      ),
    ],
    notes: [
      `named-session calls, ms: nbagent ${ms(named.ours)}; BlockingKernelClient attach ${ms(named.refs)}`,
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
