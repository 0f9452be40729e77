/**
 * Kernel layer vs jupyter_client (direct ZeroMQ), in one go on the same machine:
 *  - kernel start → first result (median of 3 starts each; ours with the interpreter already known,
 *    plus the very first start of this process, which includes interpreter discovery),
 *  - trivial execute round trip (reply + idle), median over --execs,
 *  - streaming --lines printed lines.
 * Usage: node --import tsx bench/kernel.ts [--execs 200] [--lines 200000]
 */
import { pathToFileURL } from "node:url";
import { createLocalBackend } from "../src/kernel/index.js";
import { type JupyterClientFigures, jupyterClientBench } from "./anchors.js";
import { type BenchSection, median, row } from "./types.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number(process.env[`NBAGENT_BENCH_${name.toUpperCase()}`]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

async function ourStart(): Promise<number> {
  const backend = createLocalBackend();
  const t0 = performance.now();
  const kernel = await backend.startKernel({});
  await kernel.execute("1+1");
  const ms = performance.now() - t0;
  await backend.dispose();
  return ms;
}

async function ourSteadyState(execs: number, lines: number) {
  const backend = createLocalBackend();
  const kernel = await backend.startKernel({});
  await kernel.execute("1+1");
  const lat: number[] = [];
  for (let i = 0; i < execs; i++) {
    const s = performance.now();
    await kernel.execute("1+1");
    lat.push(performance.now() - s);
  }
  let chars = 0;
  const s = performance.now();
  await kernel.execute(`for i in range(${lines}): print(i)`, {
    keepText: false,
    onChunk: (text) => {
      chars += text.length;
    },
  });
  const streamMs = performance.now() - s;
  await backend.dispose();
  return {
    roundtrip: median(lat),
    p90: [...lat].sort((a, b) => a - b)[Math.floor(lat.length * 0.9)],
    streamMs,
    chars,
  };
}

export async function run(): Promise<BenchSection> {
  const execs = arg("execs", 200);
  const lines = arg("lines", 200000);
  const cold = await ourStart(); // first start of this process: includes interpreter discovery
  const oursStarts: number[] = [];
  const refStarts: number[] = [];
  let ref: JupyterClientFigures | undefined;
  for (let i = 0; i < 3; i++) {
    oursStarts.push(await ourStart());
    const r = await jupyterClientBench(
      i === 0 ? ["--execs", String(execs), "--lines", String(lines)] : ["--execs", "1", "--lines", "1"],
    );
    if (i === 0) ref = r;
    refStarts.push(r.kernel_start_first_result_ms);
  }
  const ours = await ourSteadyState(execs, lines);
  const reference = ref!;
  const refStart = median(refStarts);
  return {
    title: "kernel layer (local ZeroMQ backend) vs jupyter_client",
    rows: [
      row("kernel start → first result", median(oursStarts), refStart, "ms", "≤ 1.0×"),
      row("… first start of the process (+interpreter discovery)", cold, refStart, "ms", "info"),
      row(
        "trivial execute round trip (median)",
        ours.roundtrip,
        reference.exec_roundtrip_median_ms,
        "ms",
        "≤ 1.10×",
      ),
      row(`stream ${lines} printed lines`, ours.streamMs, reference.stream_ms, "ms", "≤ 1.0×"),
    ],
    notes: [
      `${execs} round trips; p90 ours ${ours.p90.toFixed(2)} ms vs jupyter_client ${reference.exec_roundtrip_p90_ms} ms`,
      `streamed chars: ours ${ours.chars}, jupyter_client ${reference.stream_chars}`,
      `start samples (ms): ours ${oursStarts.map((x) => x.toFixed(0)).join(", ")}; jupyter_client ${refStarts.map((x) => x.toFixed(0)).join(", ")}`,
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (section) => console.log(JSON.stringify(section, null, 2)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
