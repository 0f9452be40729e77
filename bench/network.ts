/**
 * A gateway across a network (docs/backends.md "Across a real network"), on a second host made here:
 * a network namespace joined by a veth pair (test/gateway/netns.ts), with a relay adding the round
 * trip (this machine's kernel has no netem qdisc). Needs root and iproute2.
 *  - per call: back-to-back trivial executes on a warm kernel (reply + idle), through nbagent's
 *    gateway backend to a jupyter_server in the namespace, on a 0 ms and a 50 ms link; the
 *    reference is jupyter_client's BlockingKernelClient to an ipykernel in the same namespace over
 *    the same link (its five ZeroMQ ports relayed the same way) — the protocol's own floor, one
 *    round trip per execute. Medians; alternate rounds.
 *  - a 5 s cut: a cell printing 40 lines over 10 s, with the link cut for 5 s from its 2nd second,
 *    and from its 8th (over the cell's end), against the same cell with no cut: what the cut costs
 *    the call (all lines arrive either way).
 * Usage: node --import tsx bench/network.ts [--execs 100] [--rounds 3]
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { GatewayBackend } from "../src/kernel/index.js";
import { startJupyterServer } from "../test/gateway/helpers.js";
import { makeNamespace, netnsProblem, relay } from "../test/gateway/netns.js";
import { TEST_PYTHON } from "../test/python.js";
import { arg, type BenchSection, median, row } from "./types.js";

const exec = promisify(execFile);
const REFERENCE = new URL("./reference/execute_loop.py", import.meta.url).pathname;

/** Median ms of `execs` trivial executes through nbagent's gateway backend at `url`. */
async function ours(url: string, token: string, execs: number): Promise<number> {
  const backend = new GatewayBackend({ url, token });
  try {
    const kernel = await backend.startKernel({});
    for (let i = 0; i < 5; i++) await kernel.execute("1+1");
    const lat: number[] = [];
    for (let i = 0; i < execs; i++) {
      const s = performance.now();
      await kernel.execute("1+1");
      lat.push(performance.now() - s);
    }
    return median(lat);
  } finally {
    await backend.dispose();
  }
}

/** A 40-line, 10 s cell through nbagent; with `cut`, the link goes down for 5 s from its 2nd second. */
async function printing(url: string, token: string, cut?: () => Promise<void>): Promise<number> {
  const backend = new GatewayBackend({ url, token });
  try {
    const kernel = await backend.startKernel({});
    await kernel.execute("import time");
    let lines = 0;
    const s = performance.now();
    const run = kernel.execute("for i in range(40):\n    print(i, flush=True)\n    time.sleep(0.25)", {
      onChunk: (text, kind) => {
        if (kind === "stdout") lines += text.split("\n").length - 1;
      },
    });
    if (cut) await cut();
    await run;
    const ms = performance.now() - s;
    if (lines !== 40) throw new Error(`the cell's 40 lines arrived as ${lines}`);
    return ms;
  } finally {
    await backend.dispose();
  }
}

export async function run(): Promise<BenchSection> {
  const problem = netnsProblem();
  if (problem) throw new Error(problem);
  const execs = arg("execs", 100);
  const rounds = arg("rounds", 3);
  const ns = makeNamespace();
  const dir = mkdtempSync(join(tmpdir(), "nbagent-bench-net-"));
  const server = await startJupyterServer({ host: ns.far, wrap: ns.wrap });
  const target = new URL(server.url);
  // The reference's kernel: an ipykernel in the namespace, listening on its far address.
  const conn = join(dir, "kernel.json");
  const ports = [0, 0, 0, 0, 0].map((_, i) => 42000 + i);
  writeFileSync(
    conn,
    JSON.stringify({
      transport: "tcp",
      ip: ns.far,
      shell_port: ports[0],
      iopub_port: ports[1],
      stdin_port: ports[2],
      control_port: ports[3],
      hb_port: ports[4],
      key: "bench",
      signature_scheme: "hmac-sha256",
    }),
  );
  const kernel = spawn(
    ns.wrap[0],
    [...ns.wrap.slice(1), TEST_PYTHON, "-m", "ipykernel_launcher", "-f", conn],
    {
      stdio: "ignore",
    },
  );
  const relays: Awaited<ReturnType<typeof relay>>[] = [];
  try {
    const byRtt = new Map<number, { ours: number[]; reference: number[] }>();
    for (const rtt of [0, 50]) {
      const http = await relay(target.hostname, Number(target.port), rtt);
      const zmq = await Promise.all(ports.map((p) => relay(ns.far, p, rtt)));
      relays.push(http, ...zmq);
      const local = JSON.parse(readFileSync(conn, "utf8"));
      const names = ["shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"];
      names.forEach((name, i) => {
        local[name] = zmq[i].port;
      });
      local.ip = "127.0.0.1";
      const localConn = join(dir, `kernel-${rtt}.json`);
      writeFileSync(localConn, JSON.stringify(local));
      const url = `http://127.0.0.1:${http.port}`;
      const figures = { ours: [] as number[], reference: [] as number[] };
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? ["ours", "reference"] : ["reference", "ours"];
        for (const who of order) {
          if (who === "ours") figures.ours.push(await ours(url, server.token, execs));
          else {
            const { stdout } = await exec(TEST_PYTHON, [REFERENCE, localConn, String(execs)], {
              timeout: 300_000,
            });
            figures.reference.push(Number(stdout.trim()));
          }
        }
      }
      byRtt.set(rtt, figures);
    }
    // The cut: the 50 ms link, with and without a 5 s cut.
    const http = await relay(target.hostname, Number(target.port), 50);
    relays.push(http);
    const url = `http://127.0.0.1:${http.port}`;
    const plain: number[] = [];
    const cutAt = (from: number) => async () => {
      await new Promise((res) => setTimeout(res, from));
      ns.cut();
      await new Promise((res) => setTimeout(res, 5000));
      ns.restore();
    };
    const early: number[] = [];
    const late: number[] = [];
    for (let r = 0; r < rounds; r++) {
      plain.push(await printing(url, server.token));
      early.push(await printing(url, server.token, cutAt(2000)));
      late.push(await printing(url, server.token, cutAt(8000)));
    }
    const rows = [0, 50].map((rtt) => {
      const f = byRtt.get(rtt)!;
      return row(
        `trivial execute, ${rtt} ms link (vs jupyter_client over it)`,
        median(f.ours),
        median(f.reference),
        "ms",
        "≤ 1.2×",
      );
    });
    rows.push(
      row("10 s printing cell, 5 s cut at 2 s (vs no cut)", median(early), median(plain), "ms", "info"),
    );
    rows.push(
      row("10 s printing cell, 5 s cut at 8 s (vs no cut)", median(late), median(plain), "ms", "info"),
    );
    return {
      title: "network (a gateway on a second host: veth pair, relay latency)",
      rows,
      notes: [
        `${execs} executes per round, ${rounds} rounds alternating; medians. nbagent: gateway backend → jupyter_server (REST + WebSocket); reference: jupyter_client BlockingKernelClient → ipykernel (ZeroMQ), both in the namespace, over relays with the same latency.`,
        "A warm call is one message up and the cell's messages down (test/gateway/network.stress.test.ts counts them): the floor is one round trip.",
        "The cuts: all 40 lines arrive every time (none lost, none twice). A cut the cell outlasts costs nothing: the server holds what the kernel printed and TCP delivers it when the link is back. A cut over the cell's end delays its result by the rest of the cut plus TCP's retransmission back-off.",
      ],
    };
  } finally {
    for (const r of relays) await r.close();
    kernel.kill("SIGKILL");
    await server.stop();
    ns.remove();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(
    (s) => console.log(JSON.stringify(s, null, 2)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
