/**
 * Kernel layer vs jupyter_client (direct ZeroMQ), in one go on the same machine, in alternating
 * rounds (default 5; medians reported):
 *  - kernel start → first result (plus, for information, the very first start of this process,
 *    which also pays for interpreter discovery),
 *  - trivial execute round trip (reply + idle), median over --execs,
 *  - streaming --lines printed lines.
 * Usage: node --import tsx bench/kernel.ts [--execs 200] [--lines 200000] [--rounds 5]
 */
import { pathToFileURL } from "node:url";
import { createLocalBackend } from "../src/kernel/index.js";
import { type JupyterClientFigures, jupyterClientBench } from "./anchors.js";
import { arg, type BenchSection, median, row } from "./types.js";

/** One round of ours: start → first result, then round trips and streaming on that kernel. */
async function ourRound(execs: number, lines: number) {
  // The spawn launcher, like for like with jupyter_client (no fork server warming in the background).
  const backend = createLocalBackend({ forkServer: false });
  const t0 = performance.now();
  const kernel = await backend.startKernel({});
  await kernel.execute("1+1");
  const start = performance.now() - t0;
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
  const stream = performance.now() - s;
  await backend.dispose();
  const sorted = [...lat].sort((a, b) => a - b);
  return { start, roundtrip: median(lat), p90: sorted[Math.floor(lat.length * 0.9)], stream, chars };
}

export async function run(): Promise<BenchSection> {
  const execs = arg("execs", 200);
  const lines = arg("lines", 200000);
  const rounds = arg("rounds", 5);
  // The very first start of this process also pays for interpreter discovery.
  const cold = (await ourRound(1, 1)).start;
  // Rounds alternate ours and jupyter_client so that load drifting on a noisy machine hits both.
  const ours: Awaited<ReturnType<typeof ourRound>>[] = [];
  const refs: JupyterClientFigures[] = [];
  // Who goes first alternates too, so neither side always runs just after the other's shutdown.
  const ref = () => jupyterClientBench(["--execs", String(execs), "--lines", String(lines)]);
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      ours.push(await ourRound(execs, lines));
      refs.push(await ref());
    } else {
      refs.push(await ref());
      ours.push(await ourRound(execs, lines));
    }
  }
  const m = (xs: number[]) => median(xs);
  const refStart = m(refs.map((r) => r.kernel_start_first_result_ms));
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(x < 100 ? 2 : 0)).join(", ");
  return {
    title: "kernel layer (local ZeroMQ backend) vs jupyter_client",
    rows: [
      row("kernel start → first result", m(ours.map((o) => o.start)), refStart, "ms", "≤ 1.0×"),
      row("… first start of the process (+interpreter discovery)", cold, refStart, "ms", "info"),
      row(
        "trivial execute round trip (median)",
        m(ours.map((o) => o.roundtrip)),
        m(refs.map((r) => r.exec_roundtrip_median_ms)),
        "ms",
        "≤ 1.10×",
      ),
      row(
        `stream ${lines} printed lines`,
        m(ours.map((o) => o.stream)),
        m(refs.map((r) => r.stream_ms)),
        "ms",
        "≤ 1.0×",
      ),
    ],
    notes: [
      `medians over ${rounds} alternating rounds of ${execs} round trips and ${lines} lines each`,
      `per round — start ms: ours ${fmt(ours.map((o) => o.start))}; jupyter_client ${fmt(refs.map((r) => r.kernel_start_first_result_ms))}`,
      `per round — round trip median ms: ours ${fmt(ours.map((o) => o.roundtrip))}; jupyter_client ${fmt(refs.map((r) => r.exec_roundtrip_median_ms))}`,
      `per round — round trip p90 ms: ours ${fmt(ours.map((o) => o.p90))}; jupyter_client ${fmt(refs.map((r) => r.exec_roundtrip_p90_ms))}`,
      `per round — stream ms: ours ${fmt(ours.map((o) => o.stream))}; jupyter_client ${fmt(refs.map((r) => r.stream_ms))}`,
      `streamed chars: ours ${ours[0].chars}, jupyter_client ${refs[0].stream_chars}`,
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
