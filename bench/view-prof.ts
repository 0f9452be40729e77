/**
 * Where a watched run's CPU goes (docs/view.md, "Cost"): a host (`nbagent mcp`), a real `nbagent
 * view`, and the page in a bare Chromium (no protocol client during the run), as bench/view.ts's
 * bare row runs them; per run the CPU of the host, of `nbagent view` and of Chromium by process
 * type and by thread (from /proc), and, with NBAGENT_PROF_DIR=DIR, `node --cpu-prof` profiles of
 * the host and of `nbagent view` written there (at their exit).
 * Usage: npm run -s build && node --import tsx bench/view-prof.ts [runs]
 * (NBAGENT_PROF_NOVIEW=1: the same runs with no view, for the host's own figure; NBAGENT_PROF_STRACE=1:
 * the host's and nbagent view's system calls counted by strace -c.)
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CHROMIUM, CHROMIUM_ARGS } from "../test/view/browser.js";
import { bareChromiumReady } from "./bare-chromium.js";
import { median } from "./types.js";
import { writeNotebook } from "./view.js";

const MAIN = process.env.NBAGENT_PROF_MAIN ?? "dist/cli/nbagent.js";
const PROF = process.env.NBAGENT_PROF_DIR;
const prof = (name: string) =>
  PROF ? ["--cpu-prof", `--cpu-prof-dir=${PROF}`, `--cpu-prof-name=${name}`] : [];

/** CPU ms of one /proc stat line (utime + stime, 10 ms ticks). */
function statMs(stat: string): number {
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

function descends(pid: number, root: number): boolean {
  for (let p = pid; p > 1; ) {
    if (p === root) return true;
    try {
      const s = readFileSync(`/proc/${p}/stat`, "utf8");
      p = Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return false;
    }
  }
  return false;
}

/** CPU ms by "<process type>/<thread name>" of a process tree's processes named `comm`. */
function threads(root: number, comm?: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || !descends(Number(pid), root)) continue;
    try {
      if (comm && readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== comm) continue;
      const type = /--type=([\w-]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1] ?? "main";
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim().replace(/\d+$/, "N");
        const k = `${type}/${name}`;
        out[k] = (out[k] ?? 0) + statMs(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
      }
    } catch {
      // gone
    }
  }
  return out;
}

function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) if (v - (a[k] ?? 0) > 0) out[k] = v - (a[k] ?? 0);
  return out;
}

async function main() {
  const runs = Number(process.argv[2] ?? 5);
  const root = mkdtempSync(join(tmpdir(), "nbagent-view-prof-"));
  mkdirSync(join(root, "on"));
  writeNotebook(join(root, "on", "run.ipynb"), 200);
  const client = new Client({ name: "nbagent-view-prof", version: "0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...prof("host.cpuprofile"), MAIN, "mcp", "--cwd", join(root, "on")],
    env: { ...(process.env as Record<string, string>), NBAGENT_STATE_DIR: join(root, ".state") },
    stderr: "inherit",
  });
  await client.connect(transport);
  const host = transport.pid!;
  const run = () =>
    client.callTool(
      { name: "notebook", arguments: { action: "run", notebook_path: "run.ipynb" } },
      undefined,
      { timeout: 600_000 },
    );
  await run();
  const noView = process.env.NBAGENT_PROF_NOVIEW === "1";
  let view: ReturnType<typeof spawn> | undefined;
  let ch: ReturnType<typeof spawn> | undefined;
  /** The bare Chromium's profile folder, removed at the end. */
  let udd: string | undefined;
  if (!noView) {
    view = spawn(process.execPath, [...prof("view.cpuprofile"), MAIN, "view", "--no-open", "--port", "0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const url = await new Promise<string>((r) => createInterface({ input: view!.stdout! }).once("line", r));
    udd = mkdtempSync(join(tmpdir(), "bare-chromium-"));
    ch = spawn(
      CHROMIUM,
      [
        ...CHROMIUM_ARGS,
        "--remote-debugging-port=0",
        `--user-data-dir=${udd}`,
        "--window-size=1200,900",
        url,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    await bareChromiumReady(ch);
  }
  // NBAGENT_PROF_STRACE=1: the system calls of the host and of nbagent view during the runs (strace -c).
  const traced = process.env.NBAGENT_PROF_STRACE === "1";
  const straces = traced
    ? [host, ...(view ? [view.pid!] : [])].map((pid) =>
        spawn("strace", ["-c", "-f", "-e", "trace=write,writev,read,sendmsg,recvmsg", "-p", String(pid)], {
          stdio: ["ignore", "ignore", "pipe"],
        }),
      )
    : [];
  const stOut = straces.map((st) => {
    let t = "";
    st.stderr!.on("data", (d) => {
      t += d;
    });
    return () => t;
  });
  if (traced) await new Promise((r) => setTimeout(r, 500));
  const walls: number[] = [];
  const hostCpu: number[] = [];
  const viewCpu: number[] = [];
  const chCpu: number[] = [];
  const byThread: Record<string, number[]> = {};
  for (let i = 0; i < runs; i++) {
    const h0 = threads(host, "node");
    const v0 = view ? threads(view.pid!) : {};
    const c0 = ch ? threads(ch.pid!, "chromium") : {};
    const t0 = performance.now();
    await run();
    walls.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 300)); // the page's last draws
    const dh = diff(h0, threads(host, "node"));
    const dv = view ? diff(v0, threads(view.pid!)) : {};
    const dc = ch ? diff(c0, threads(ch.pid!, "chromium")) : {};
    const sum = (d: Record<string, number>) => Object.values(d).reduce((a, b) => a + b, 0);
    hostCpu.push(sum(dh));
    viewCpu.push(sum(dv));
    chCpu.push(sum(dc));
    for (const [pre, d] of [
      ["host ", dh],
      ["view ", dv],
      ["chromium ", dc],
    ] as const)
      for (const [k, v] of Object.entries(d)) {
        byThread[pre + k] = byThread[pre + k] ?? [];
        byThread[pre + k].push(v);
      }
  }
  for (const [i, st] of straces.entries()) {
    st.kill("SIGINT");
    await new Promise((r) => st.once("exit", r));
    console.error(`${i === 0 ? "host" : "nbagent view"}, ${runs} runs:\n${stOut[i]()}`);
  }
  const sorted = Object.entries(byThread)
    .map(([k, v]) => [k, median([...v, ...Array(runs - v.length).fill(0)])] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    JSON.stringify(
      {
        runs,
        wallMs: walls.map(Math.round),
        medianWallMs: Math.round(median(walls)),
        hostCpuMs: median(hostCpu),
        viewCpuMs: median(viewCpu),
        chromiumCpuMs: median(chCpu),
        chromiumCpuMsByRun: chCpu,
        viewCpuMsByRun: viewCpu,
        byThread: Object.fromEntries(sorted),
        load: readFileSync("/proc/loadavg", "utf8").trim(),
      },
      null,
      1,
    ),
  );
  if (ch) {
    ch.kill("SIGTERM");
    await new Promise((r) => ch!.once("exit", r));
  }
  if (view) {
    view.kill("SIGTERM");
    await new Promise((r) => view!.once("exit", r));
  }
  await client.close();
  await new Promise((r) => setTimeout(r, 1000));
  rmSync(root, { recursive: true, force: true });
  if (udd) rmSync(udd, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
