/**
 * Benchmark of the python tool, next to jupyter_client (../shared/anchors/jupyter_client_bench.py)
 * in the same run:
 * - per-cell overhead: (call with 201 trivial cells − call with 1) / 200, against jupyter_client's
 *   trivial execute round trip (goal ≤ 1.2×);
 * - 100 trivial cells in one call, wall, against jupyter_client running the same 100 one after
 *   another on its own kernel, each to its reply and idle (bench/reference/execute_cells.py), in
 *   alternating rounds: the call's cells are pipelined (docs/python-tool.md), a plain client's are not;
 * - 1 GiB printed through the tool in a child process: its peak RSS against jupyter_client's when it
 *   drains the same cell keeping the text, as nbclient keeps outputs (bench/reference/print_drain.py;
 *   ipykernel sends a fast cell's whole batch as one message, so a client that only counted would peak
 *   the same); the absolute bound of 150 MB is a note. And the artifact's size against the bytes
 *   printed (goal equal).
 * Run alone: node --import tsx bench/python-tool.ts
 */
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRuntime, PRELUDE_PATH } from "../src/runtime/index.js";
import { resolveSettings } from "../src/runtime/settings.js";
import { createPythonTool } from "../src/tools/python/python.js";
import { jupyterClientBench, jupyterClientCells, jupyterClientDrain } from "./anchors.js";
import { type BenchSection, median, row } from "./types.js";

const SELF = fileURLToPath(import.meta.url);
const GIB = 1024 ** 3;

async function perCellOverhead(rounds: number): Promise<{ perCellMs: number; samples: number[] }> {
  const root = mkdtempSync(join(tmpdir(), "nbagent-bench-"));
  const runtime = createRuntime({ settings: resolveSettings({}, process.env), stateRoot: root });
  const tool = createPythonTool({ cwd: root, runtime });
  const cells = (n: number) => ({ cells: Array.from({ length: n }, () => ({ code: "1+1" })), timeout: 120 });
  const timed = async (n: number) => {
    const t0 = performance.now();
    const r = await tool.execute("bench", cells(n));
    if (r.isError) throw new Error((r.content[0] as { text: string }).text);
    return performance.now() - t0;
  };
  try {
    await timed(1); // kernel start
    await timed(201); // warm up
    const samples: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const one = await timed(1);
      const many = await timed(201);
      samples.push((many - one) / 200);
    }
    return { perCellMs: median(samples), samples };
  } finally {
    await runtime.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

/** One call of `n` trivial cells (wall) and jupyter_client's `n` cells one after another, alternating. */
async function cellsInOneCall(
  rounds: number,
  n: number,
): Promise<{ oursMs: number; refMs: number; ours: number[]; ref: number[] }> {
  const reference = await jupyterClientCells();
  const root = mkdtempSync(join(tmpdir(), "nbagent-bench-"));
  const runtime = createRuntime({ settings: resolveSettings({}, process.env), stateRoot: root });
  const tool = createPythonTool({ cwd: root, runtime });
  const params = { cells: Array.from({ length: n }, () => ({ code: "1+1" })), timeout: 120 };
  const timed = async () => {
    const t0 = performance.now();
    const r = await tool.execute("bench", params);
    if (r.isError) throw new Error((r.content[0] as { text: string }).text);
    return performance.now() - t0;
  };
  try {
    await timed(); // kernel start, warm up
    const ours: number[] = [];
    const ref: number[] = [];
    for (let i = 0; i < rounds; i++) {
      // who goes first alternates too
      if (i % 2 === 0) ours.push(await timed());
      ref.push(await reference.cells(n));
      if (i % 2 === 1) ours.push(await timed());
    }
    return { oursMs: median(ours), refMs: median(ref), ours, ref };
  } finally {
    await reference.close();
    await runtime.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Child side: print 1 GiB through the tool and report peak RSS and the artifact's size. */
async function gibChild(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "nbagent-bench-gib-"));
  const runtime = createRuntime({ settings: resolveSettings({}, process.env), stateRoot: root });
  const tool = createPythonTool({ cwd: root, runtime });
  try {
    const code = [
      "import sys",
      "line = 'x' * 1023 + '\\n'",
      "block = line * 64",
      `for _ in range(${GIB / (1024 * 64)}):`,
      "    sys.stdout.write(block)",
      "sys.stdout.flush()",
    ].join("\n");
    await tool.execute("bench", { cells: [{ code: "1" }] }); // kernel start, modules loaded
    const baselineRssBytes = process.memoryUsage().rss;
    const t0 = performance.now();
    const r = await tool.execute("bench", { cells: [{ code }], timeout: 900 });
    const ms = performance.now() - t0;
    const o = r.details.output;
    const path = o.artifactId ? runtime.artifacts.resolve(o.artifactId) : undefined;
    const artifactBytes = path ? statSync(path).size : 0;
    process.stdout.write(
      `${JSON.stringify({
        ok: !r.isError,
        ms,
        totalBytes: o.totalBytes,
        artifactBytes,
        maxRssBytes: process.resourceUsage().maxRSS * 1024,
        baselineRssBytes,
        text: r.isError ? (r.content[0] as { text: string }).text.slice(-500) : undefined,
      })}\n`,
    );
  } finally {
    await runtime.dispose();
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The host as shipped is plain node running compiled JS; tsx's loader (a worker thread and its
 * caches) alone adds ~60 MB of RSS. So the child is this file bundled by esbuild (tsx's own
 * compiler) with prelude.py next to it, run by plain node.
 */
async function bundleChild(): Promise<string> {
  const dir = fileURLToPath(new URL("../node_modules/.cache/nbagent-bench/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, "python-tool-child.mjs");
  const esbuild = await import("esbuild");
  await esbuild.build({
    entryPoints: [SELF],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    logLevel: "error",
  });
  copyFileSync(PRELUDE_PATH, join(dir, "prelude.py"));
  return outfile;
}

interface GibFigures {
  maxRssBytes: number;
  baselineRssBytes: number;
  artifactBytes: number;
  totalBytes: number;
  ms: number;
}

async function gibInChild(): Promise<GibFigures> {
  const script = await bundleChild();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, "--child-1gib"], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      try {
        const r = JSON.parse(out.trim().split("\n").pop()!);
        if (!r.ok) throw new Error(`1 GiB call failed: ${r.text}`);
        resolve(r);
      } catch (err) {
        reject(new Error(`child exited ${code}: ${(err as Error).message} ${out.slice(-300)}`));
      }
    });
  });
}

export async function run(): Promise<BenchSection> {
  // reference first, then ours, in one run (ratios, not absolute times, are what hold)
  const ref = await jupyterClientBench(["--execs", "200", "--lines", "1000"]);
  const overhead = await perCellOverhead(5);
  const hundred = await cellsInOneCall(7, 100);
  const gib = await gibInChild();
  const drain = await jupyterClientDrain(GIB);
  const rssMb = gib.maxRssBytes / 1e6;
  const refRssMb = drain.max_rss_bytes / 1e6;
  return {
    title: "python tool (vs jupyter_client)",
    rows: [
      row(
        "per-cell overhead vs execute round trip",
        +overhead.perCellMs.toFixed(3),
        ref.exec_roundtrip_median_ms,
        "ms",
        "≤ 1.2×",
      ),
      row(
        "100 trivial cells in one call vs jupyter_client running them one after another",
        +hundred.oursMs.toFixed(1),
        +hundred.refMs.toFixed(1),
        "ms",
        "≤ 1.0×",
      ),
      row(
        "1 GiB printed: peak RSS vs jupyter_client",
        +rssMb.toFixed(1),
        +refRssMb.toFixed(1),
        "MB",
        "≤ 1.0×",
      ),
      row(
        "1 GiB printed: seconds vs jupyter_client",
        +(gib.ms / 1000).toFixed(1),
        +drain.seconds.toFixed(1),
        "s",
        "info",
      ),
      row("1 GiB printed: artifact bytes vs printed", gib.artifactBytes, GIB, "bytes", "= 1.0×"),
    ],
    notes: [
      `per-cell samples (ms): ${overhead.samples.map((s) => s.toFixed(2)).join(", ")}; medians of 5 rounds`,
      `100 cells in one call (ms): ours ${hundred.ours.map((s) => s.toFixed(0)).join(", ")}; jupyter_client ${hundred.ref.map((s) => s.toFixed(0)).join(", ")}; medians of 7 alternating rounds`,
      `1 GiB child: plain node on an esbuild bundle; RSS after kernel start ${(gib.baselineRssBytes / 1e6).toFixed(0)} MB, peak ${(gib.maxRssBytes / 1e6).toFixed(0)} MB`,
      `1 GiB: the host's peak ${rssMb.toFixed(0)} MB against the bound of 150 MB: ${rssMb <= 150 ? "met" : "MISSED"}; jupyter_client received ${drain.received_bytes} bytes in ${drain.seconds.toFixed(1)} s`,
      `1 GiB through the tool took ${(gib.ms / 1000).toFixed(1)} s (${(GIB / 1e6 / (gib.ms / 1000)).toFixed(0)} MB/s); sink counted ${gib.totalBytes} bytes`,
    ],
  };
}

// Node runs a main module from its real path: the child bundle under a symlinked node_modules (a
// worktree sharing the main checkout's) is SELF only once its path is resolved too.
if (process.argv[1] && realpathSync(process.argv[1]) === SELF) {
  if (process.argv.includes("--child-1gib")) await gibChild();
  else process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
}
