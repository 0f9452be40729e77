/**
 * What `nbagent view` costs (docs/view.md, "Cost"), with the built commands as a user runs them: a
 * host (`nbagent mcp` over stdio, driven by the official SDK client), a real `nbagent view
 * --no-open`, and readers of its `/api/events` stream (node:http, as a page's EventSource reads it).
 *
 * 1. Output → viewer latency: a cell prints `L <time.time_ns()>` lines (flushed, 5 ms apart); each
 *    reader takes arrival − print on the same wall clock (one machine). Readers: the view's SSE
 *    stream (the page's path: host socket → nbagent view → HTTP), and a raw reader of the host's own
 *    socket (the first hop alone), both during the same cell.
 *    And the page drawn: the same lines, run as a notebook cell the page shows, timed in headless
 *    Chromium (Debian's) when each line's text is in the page's DOM (a MutationObserver on the
 *    notebook: after the page's own once-a-frame redraw, before the paint).
 * 2. A 200-cell notebook run (the notebook tool's run, small printing cells) with a viewer connected
 *    (nbagent view + an SSE reader consuming) vs no view process vs a host with NBAGENT_VIEW=0;
 *    and with the page open in Chromium: driven by playwright (its DevTools protocol client
 *    attached, as in the tests), and in a bare Chromium started with the page's URL and no protocol
 *    client during the run (as a person's browser; checked afterwards to have taken the run's
 *    messages); interleaved rounds, order flipped each round, medians.
 * 3. Host memory while one cell prints 100,000 lines (and 100,000 lines of 1 KB) with a viewer that
 *    does not read (a raw socket viewer that pauses; nbagent view with a paused SSE reader) vs no
 *    viewer: the host's VmRSS sampled every 20 ms — start, peak, end — and the view process's.
 *
 * Other nbagent processes of the user are seen by the view too (it aggregates them all): every
 * figure is filtered to this benchmark's own host. And any other `nbagent view` of the user's (another
 * test's, a forgotten one) watches this benchmark's hosts: its reading costs CPU on the same machine,
 * and a host with a viewer builds events. The run section counts such viewers; run the section in a
 * mount namespace with a private socket folder (PRIVATE below) for figures without them.
 * Usage: npm run bench view
 * (NBAGENT_BENCH_ROUNDS, NBAGENT_BENCH_LINES to change rounds / latency lines).
 * Alone: node --import tsx bench/view.ts
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { get, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { chromium } from "playwright-core";
import { viewSocketDir } from "../src/view/host.js";
import { CHROMIUM, CHROMIUM_ARGS, launchChromium } from "../test/view/browser.js";
import { bareChromiumReady } from "./bare-chromium.js";
import { arg, type BenchRow, type BenchSection, median, row } from "./types.js";

const MAIN = "dist/cli/nbagent.js";

/** How to run this section where other processes' views (other tests, a forgotten nbagent view) cannot see its hosts. */
const PRIVATE =
  "as root: unshare -m sh -c 'mount -t tmpfs -o mode=700 none /tmp/nbagent-ipc-0/view && npm run bench view'";

/** Wall time in ms (sub-millisecond), the clock python's time.time_ns() reads. */
const wallMs = () => performance.timeOrigin + performance.now();

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

function text(r: unknown): string {
  const c = (r as { content?: { type: string; text?: string }[] }).content ?? [];
  return c.map((x) => (x.type === "text" ? (x.text ?? "") : "")).join("\n");
}

function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** CPU time a process used so far (user + system), in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The parent of a process (undefined: gone). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Whether a process descends from this one (the bench's own Chromium, not another one's on the machine). */
let ROOT_PID = process.pid;
function ours(pid: number): boolean {
  for (let p: number | undefined = pid; p !== undefined && p > 1; p = parentOf(p))
    if (p === ROOT_PID) return true;
  return false;
}

/** CPU time (ms) of the bench's Chromium processes by --type (browser, renderer, gpu-process, utility). */
function chromiumCpuByType(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "chromium") continue;
      if (!ours(Number(pid))) continue;
      const type = /--type=([\w-]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1] ?? "browser";
      out[type] = (out[type] ?? 0) + cpuMs(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

interface Host {
  client: Client;
  pid: number;
  /** Its view socket (undefined with NBAGENT_VIEW=0). */
  socket?: string;
  hostId?: string;
  call(tool: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

async function startHost(root: string, env: Record<string, string> = {}): Promise<Host> {
  mkdirSync(root, { recursive: true });
  const client = new Client({ name: "nbagent-bench-view", version: "0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, "mcp", "--cwd", root],
    env: { ...(process.env as Record<string, string>), NBAGENT_STATE_DIR: join(root, ".state"), ...env },
    stderr: "inherit",
  });
  await client.connect(transport);
  const pid = transport.pid!;
  // The socket is listening before the server reads stdin (src/mcp/stdio.ts), so it is there now.
  const dir = viewSocketDir();
  const name = dir
    ? readdirSync(dir).find((n) => n.startsWith(`host-${pid}-`) && n.endsWith(".sock"))
    : undefined;
  return {
    client,
    pid,
    ...(name ? { socket: join(dir!, name), hostId: name.slice(5, -5) } : {}),
    async call(tool, args) {
      const r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 3_600_000 });
      const t = text(r);
      if (r.isError) throw new Error(`${tool} call failed: ${t.slice(0, 2000)}`);
      return t;
    },
    close: () => client.close(),
  };
}

interface HubMsg {
  type: string;
  hostId?: string;
  host?: { id: string };
  event?: { type: string; output?: { kind: string; text?: string; skippedLines?: number } };
}

interface View {
  proc: ChildProcessWithoutNullStreams;
  port: number;
  token: string;
  stop(): Promise<void>;
}

/** The view processes this benchmark started: stopped if it ends early. */
const views = new Set<ChildProcessWithoutNullStreams>();
process.on("exit", () => {
  for (const v of views) v.kill("SIGTERM");
});

async function startView(): Promise<View> {
  const proc = spawn(process.execPath, [MAIN, "view", "--no-open", "--port", "0"], { stdio: "pipe" });
  views.add(proc);
  proc.once("exit", () => views.delete(proc));
  proc.stderr.resume();
  const first = await new Promise<string>((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`nbagent view exited (${code})`)));
    createInterface({ input: proc.stdout }).once("line", resolve);
  });
  const m = /^http:\/\/127\.0\.0\.1:(\d+)\/\?token=([0-9a-f]+)$/.exec(first);
  if (!m) throw new Error(`nbagent view's first line is not its URL: ${first}`);
  return {
    proc,
    port: Number(m[1]),
    token: m[2],
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
      }),
  };
}

interface Sse {
  res: IncomingMessage;
  /** Resolves when a message matching `pred` has come (from now on). */
  until(pred: (m: HubMsg) => boolean): Promise<void>;
  close(): void;
}

/** A reader of the view's /api/events, as a page reads it; `onMessage` gets each message and when it came. */
function sse(view: View, onMessage: (m: HubMsg, at: number) => void): Promise<Sse> {
  const waiters = new Set<{ pred: (m: HubMsg) => boolean; resolve: () => void }>();
  const known = new Set<string>();
  return new Promise((resolve, reject) => {
    const req = get(
      {
        host: "127.0.0.1",
        port: view.port,
        path: "/api/events",
        headers: { Authorization: `Bearer ${view.token}` },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`/api/events: ${res.statusCode}`));
        res.setEncoding("utf8");
        let buf = "";
        res.on("data", (chunk: string) => {
          const at = wallMs();
          buf += chunk;
          for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = block
              .split("\n")
              .filter((l) => l.startsWith("data: "))
              .map((l) => l.slice(6))
              .join("\n");
            if (!data) continue;
            if (block.startsWith("event: state")) {
              // The hosts the view knew when this reader came: told as their snapshots would be.
              const state = JSON.parse(data) as { hosts: { host: { id: string } }[] };
              for (const h of state.hosts) known.add(h.host.id);
              for (const w of waiters)
                if ([...known].some((id) => w.pred({ type: "snapshot", hostId: id }))) {
                  waiters.delete(w);
                  w.resolve();
                }
              continue;
            }
            const msg = JSON.parse(data) as HubMsg;
            onMessage(msg, at);
            for (const w of waiters)
              if (w.pred(msg)) {
                waiters.delete(w);
                w.resolve();
              }
          }
        });
        res.on("error", () => {});
        resolve({
          res,
          until: (pred) =>
            new Promise<void>((r) => {
              if ([...known].some((id) => pred({ type: "snapshot", hostId: id }))) r();
              else waiters.add({ pred, resolve: r });
            }),
          close: () => req.destroy(),
        });
      },
    );
    req.on("error", () => {});
  });
}

/** A raw viewer of a host's own socket (src/view/wire.ts): one JSON value per line. */
function rawViewer(path: string, onMessage?: (m: HubMsg, at: number) => void): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(path, () => resolve(s));
    s.once("error", reject);
    if (onMessage)
      createInterface({ input: s, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) =>
        onMessage(JSON.parse(line) as HubMsg, wallMs()),
      );
  });
}

/** The `L <ns>` lines of a stream output of this host's messages: arrival − print, in ms. */
function latencies(into: number[], hostId: string | undefined) {
  return (m: HubMsg, at: number) => {
    if (hostId !== undefined && m.hostId !== hostId) return;
    if (m.type !== "event" || m.event?.type !== "cell-output" || m.event.output?.kind !== "stream") return;
    for (const line of (m.event.output.text ?? "").split("\n")) {
      const x = /^L (\d+)$/.exec(line);
      if (x) into.push(at - Number(x[1].slice(0, -3)) / 1000);
    }
  };
}

/** How many viewers a host's socket has now (any nbagent view of the user's, e.g. another test's, connects to every host). */
function otherViewers(socket: string): number {
  try {
    const out = execFileSync("ss", ["-xH", "state", "connected"], { encoding: "utf8" });
    // Listed under the name it was bound to (src/view/host.ts binds, then renames); each line a viewer.
    const bound = socket.replace(/host-([^/]+)\.sock$/, ".binding-$1.sock");
    return out.split("\n").filter((l) => l.includes(bound)).length;
  } catch {
    return Number.NaN;
  }
}

async function latency(root: string, lines: number): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const host = await startHost(root);
  const view = await startView();
  const viaSse: number[] = [];
  const viaSocket: number[] = [];
  try {
    if (!host.socket) throw new Error("the host has no view socket (NBAGENT_VIEW=0, or no socket root)");
    await host.call("python", { cells: [{ code: "import time" }] }); // kernel start
    const reader = await sse(view, latencies(viaSse, host.hostId));
    const raw = await rawViewer(host.socket, latencies(viaSocket, undefined));
    // The hub connects to a host as it finds its socket; this one is there once its snapshot came.
    await reader.until((m) => m.type === "snapshot" && m.hostId === host.hostId);
    const code = `for _ in range(${lines}):\n    print(f"L {time.time_ns()}", flush=True)\n    time.sleep(0.005)`;
    await host.call("python", { cells: [{ code }] }); // warm-up (the first lines of a fresh connection)
    viaSse.length = 0;
    viaSocket.length = 0;
    // Waited for from before the call: the view may deliver the call's end before the MCP result.
    const seenEnd = reader.until(
      (m) => m.hostId === host.hostId && m.type === "event" && m.event?.type === "call-ended",
    );
    await host.call("python", { cells: [{ code }] });
    await seenEnd;
    reader.close();
    raw.destroy();
  } finally {
    await view.stop();
    await host.close();
  }
  if (viaSse.length < lines) throw new Error(`the SSE reader saw ${viaSse.length} of ${lines} lines`);
  return {
    rows: [
      row("output → SSE reader (via nbagent view), median", median(viaSse), median(viaSocket), "ms", "info"),
      row("output → SSE reader, p99", quantile(viaSse, 0.99), quantile(viaSocket, 0.99), "ms", "info"),
      row("output → SSE reader, max", Math.max(...viaSse), Math.max(...viaSocket), "ms", "info"),
    ],
    notes: [
      `latency: ${viaSse.length} lines printed 5 ms apart (print(..., flush=True): ipykernel's own 0.2 s stdout batching is not the view's); reference = a raw reader of the host's socket, same cell`,
    ],
  };
}

/**
 * Output → the page's DOM: a notebook cell printing `L <ns>` lines, the notebook shown in Chromium,
 * each line timed when its text is first in the page (the page's clock and python's are the same
 * wall clock, one machine).
 */
async function pageLatency(root: string, lines: number): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const host = await startHost(root);
  const view = await startView();
  const browser = await launchChromium();
  const path = join(root, "latency.ipynb");
  const code = `import time\nfor _ in range(${lines}):\n    print(f"L {time.time_ns()}", flush=True)\n    time.sleep(0.005)`;
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    cells: [{ cell_type: "code", id: "lat", metadata: {}, execution_count: null, outputs: [], source: code }],
  };
  writeFileSync(path, `${JSON.stringify(nb, null, 1)}\n`);
  let drawn: number[] = [];
  const viaSse: number[] = [];
  try {
    await host.call("notebook", { action: "run", notebook_path: "latency.ipynb" }); // kernel start, listed
    const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await page.goto(`http://127.0.0.1:${view.port}/?token=${view.token}`);
    const button = page.locator(`#nb-list button[data-path=${JSON.stringify(path)}]`);
    await button.click();
    await page.locator("#nb-main .nb-cell[data-id=lat]").waitFor();
    // As a string: tsx would wrap a named function in a helper the page does not have.
    await page.evaluate(`(() => {
      const seen = new Set();
      const times = [];
      window.nbLatency = times;
      const lines = () =>
        Array.from(document.querySelectorAll("#nb-main .nb-stream-stdout")).flatMap((el) =>
          Array.from((el.textContent || "").matchAll(/L (\\d+)/g), (m) => m[1]),
        );
      // The warm-up run's lines, shown from the file until the run clears them, are not timed.
      for (const ns of lines()) seen.add(ns);
      new MutationObserver(() => {
        const at = performance.timeOrigin + performance.now();
        for (const ns of lines())
          if (!seen.has(ns)) {
            seen.add(ns);
            times.push(at - Number(ns.slice(0, -3)) / 1000);
          }
      }).observe(document.getElementById("nb-main"), { subtree: true, childList: true, characterData: true });
    })()`);
    const reader = await sse(view, latencies(viaSse, host.hostId));
    await reader.until((m) => m.type === "snapshot" && m.hostId === host.hostId);
    const seenEnd = reader.until(
      (m) => m.hostId === host.hostId && m.type === "event" && m.event?.type === "call-ended",
    );
    await host.call("notebook", { action: "run", notebook_path: "latency.ipynb" });
    await seenEnd;
    reader.close();
    // The page may draw the last lines after the tool's result: wait until it has them all.
    await page.waitForFunction(
      (n) => (window as unknown as { nbLatency: number[] }).nbLatency.length >= n,
      lines,
    );
    drawn = await page.evaluate(() => (window as unknown as { nbLatency: number[] }).nbLatency);
  } finally {
    await browser.close();
    await view.stop();
    await host.close();
  }
  return {
    rows: [
      row("output → the page's DOM (Chromium), median", median(drawn), median(viaSse), "ms", "info"),
      row("output → the page's DOM, p99", quantile(drawn, 0.99), quantile(viaSse, 0.99), "ms", "info"),
    ],
    notes: [
      `page: ${drawn.length} lines of a notebook cell run by the notebook tool, printed 5 ms apart, timed in headless Chromium by a MutationObserver on the shown notebook (the server writes the page's stream at most every 50 ms, src/view/server.ts; the page draws the notebook at the frame after a write, its sidebar and timeline once a second for cell news: src/view/page/draw-tick.ts); reference = an SSE reader of the same view, same cell`,
    ],
  };
}

/** A notebook of `n` small printing cells (the run section's; bench/view-prof.ts runs it too). */
export function writeNotebook(path: string, n: number): void {
  const cells = Array.from({ length: n }, (_, i) => ({
    cell_type: "code",
    id: `c${i}`,
    metadata: {},
    execution_count: null,
    outputs: [],
    source: `x${i} = ${i} * 2\nprint("cell", ${i}, x${i})\nfor j in range(3):\n    print(j, end=" ")`,
  }));
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    cells,
  };
  writeFileSync(path, `${JSON.stringify(nb, null, 1)}\n`);
}

async function runCost(root: string, rounds: number): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const CELLS = 200;
  const on = await startHost(join(root, "on"), {});
  const off = await startHost(join(root, "off"), { NBAGENT_VIEW: "0" });
  const open: number[] = [];
  const closed: number[] = [];
  const disabled: number[] = [];
  const seen: number[] = [];
  const strangers: number[] = [];
  /** The host process's CPU time per run (its kernel's is the same whoever watches). */
  const cpuOpen: number[] = [];
  const cpuClosed: number[] = [];
  const cpuOff: number[] = [];
  /** nbagent view's CPU per watched run, and this process's (the SSE reader, the MCP client). */
  const viewCpu: number[] = [];
  const readerCpu: number[] = [];
  /** The same run watched by the real page in Chromium, the notebook shown (the issue's "page open"). */
  const paged: number[] = [];
  const pageCpu: number[] = [];
  const pageCpuByType: Record<string, number[]> = {};
  const bare: number[] = [];
  /** The bare Chromiums' profile folders, removed at the end (their last processes may still write at exit). */
  const bareProfiles: string[] = [];
  const bareCpu: number[] = [];
  const bareCpuByType: Record<string, number[]> = {};
  /** The bench process's CPU (MCP client, playwright's end of the browser's protocol) per page-open run. */
  const pageBenchCpu: number[] = [];
  const browser = await launchChromium();
  try {
    if (!on.socket) throw new Error("the host has no view socket");
    for (const [h, dir] of [
      [on, "on"],
      [off, "off"],
    ] as const) {
      writeNotebook(join(root, dir, "run.ipynb"), CELLS);
      const t = await h.call("notebook", { action: "run", notebook_path: "run.ipynb" }); // kernel start
      if (!t.includes("cell 199 398"))
        throw new Error(`the run did not print its last cell:\n${t.slice(-2000)}`);
    }
    const timed = async (h: Host, into: number[]) => {
      const c0 = cpuMs(h.pid);
      const t0 = performance.now();
      await h.call("notebook", { action: "run", notebook_path: "run.ipynb" });
      const wall = (performance.now() - t0) / 1000;
      into.push(cpuMs(h.pid) - c0);
      return wall;
    };
    const steps = [
      async () => {
        const view = await startView();
        let n = 0;
        const reader = await sse(view, (m) => {
          if (m.hostId === on.hostId) n++;
        });
        await reader.until((m) => m.type === "snapshot" && m.hostId === on.hostId);
        n = 0;
        const v0 = cpuMs(view.proc.pid!);
        const r0 = process.cpuUsage();
        const seenEnd = reader.until(
          (m) => m.hostId === on.hostId && m.type === "event" && m.event?.type === "call-ended",
        );
        open.push(await timed(on, cpuOpen));
        await seenEnd;
        viewCpu.push(cpuMs(view.proc.pid!) - v0);
        const r = process.cpuUsage(r0);
        readerCpu.push((r.user + r.system) / 1000);
        seen.push(n);
        reader.close();
        await view.stop();
      },
      async () => {
        const view = await startView();
        const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
        try {
          const page = await context.newPage();
          await page.goto(`http://127.0.0.1:${view.port}/?token=${view.token}`);
          await page
            .locator(`#nb-list button[data-path=${JSON.stringify(join(root, "on", "run.ipynb"))}]`)
            .click();
          await page.locator("#nb-main .nb-cell[data-id=c0]").waitFor();
          // NBAGENT_BENCH_PAGE_PROFILE=FILE: the page's JavaScript profile of the run (DevTools' format).
          const profileTo = process.env.NBAGENT_BENCH_PAGE_PROFILE;
          const cdp = profileTo ? await context.newCDPSession(page) : undefined;
          if (cdp) {
            await cdp.send("Profiler.enable");
            await cdp.send("Profiler.start");
          }
          // NBAGENT_BENCH_PAGE_TRACE=FILE: Chromium's trace of the run (style, layout, paint, tasks; DevTools' format).
          const traceTo = process.env.NBAGENT_BENCH_PAGE_TRACE;
          if (traceTo)
            await browser.startTracing(page, {
              path: traceTo,
              categories: [
                "devtools.timeline",
                "disabled-by-default-devtools.timeline",
                "toplevel",
                "blink",
                "v8.execute",
              ],
            });
          const t0 = chromiumCpuByType();
          const b0 = process.cpuUsage();
          paged.push(await timed(on, []));
          const b = process.cpuUsage(b0);
          pageBenchCpu.push((b.user + b.system) / 1000);
          const t1 = chromiumCpuByType();
          pageCpu.push(Object.entries(t1).reduce((n, [k, v]) => n + v - (t0[k] ?? 0), 0));
          for (const [k, v] of Object.entries(t1)) {
            pageCpuByType[k] = pageCpuByType[k] ?? [];
            pageCpuByType[k].push(v - (t0[k] ?? 0));
          }
          if (process.env.NBAGENT_BENCH_PAGE_PROFILE)
            console.error(
              Object.entries(t1)
                .map(([k, v]) => `${k} ${v - (t0[k] ?? 0)} ms`)
                .join(", "),
            );
          if (traceTo) await browser.stopTracing();
          if (cdp && profileTo) {
            const { profile } = await cdp.send("Profiler.stop");
            writeFileSync(profileTo, JSON.stringify(profile));
          }
        } finally {
          await context.close();
          await view.stop();
        }
      },
      async () => {
        const view = await startView();
        const udd = mkdtempSync(join(tmpdir(), "bare-chromium-"));
        const ch = spawn(
          CHROMIUM,
          [
            ...CHROMIUM_ARGS,
            "--remote-debugging-port=0",
            `--user-data-dir=${udd}`,
            "--window-size=1200,900",
            `http://127.0.0.1:${view.port}/?token=${view.token}`,
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        );
        const ws = await bareChromiumReady(ch);
        ROOT_PID = ch.pid!;
        const t0 = chromiumCpuByType();
        bare.push(await timed(on, []));
        const t1 = chromiumCpuByType();
        ROOT_PID = process.pid;
        bareCpu.push(Object.entries(t1).reduce((n, [k, v]) => n + v - (t0[k] ?? 0), 0));
        for (const [k, v] of Object.entries(t1)) {
          bareCpuByType[k] = bareCpuByType[k] ?? [];
          bareCpuByType[k].push(v - (t0[k] ?? 0));
        }
        // Afterwards (the CPU read): the page did show the notebook and take the run's messages.
        const cdp = await chromium.connectOverCDP(ws);
        const [shown] = cdp.contexts()[0].pages();
        await shown.locator("#nb-main .nb-cell[data-id=c0]").waitFor();
        const taken = Number(await shown.evaluate(() => document.body.dataset.applied));
        if (!(taken > 600)) throw new Error(`the bare page took ${taken} messages`);
        await cdp.close();
        ch.kill("SIGTERM");
        await new Promise((r) => ch.once("exit", r));
        bareProfiles.push(udd);
        await view.stop();
      },
      async () => {
        strangers.push(otherViewers(on.socket!));
        closed.push(await timed(on, cpuClosed));
      },
      async () => {
        disabled.push(await timed(off, cpuOff));
      },
    ];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 ? [...steps].reverse() : steps;
      for (const step of order) await step();
    }
  } finally {
    await browser.close();
    for (const d of bareProfiles) rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    await on.close();
    await off.close();
  }
  const notes = [
    `run: ${rounds} rounds of a ${CELLS}-cell notebook (x = i*2; print; 3 prints) through the notebook tool's run (MCP), each host's kernel warm; order flipped each round; medians`,
    `Chromium's CPU (all its processes) per run with the page open: ${median(pageCpu)} ms (by process type: ${Object.entries(
      pageCpuByType,
    )
      .map(([k, v]) => `${k} ${median(v)}`)
      .join(
        ", ",
      )} ms; medians); the bench process (MCP client, playwright) ${median(pageBenchCpu).toFixed(0)} ms`,
    `the same page in a bare Chromium (no protocol client during the run): ${median(bareCpu)} ms (${Object.entries(
      bareCpuByType,
    )
      .map(([k, v]) => `${k} ${median(v)}`)
      .join(", ")} ms; medians)`,
    `the SSE reader got ${median(seen)} messages of the host per run (median); CPU per watched run: nbagent view ${median(viewCpu)} ms, the bench process (SSE reader + MCP client) ${median(readerCpu).toFixed(0)} ms`,
  ];
  const stray = strangers.filter((x) => x > 0).length;
  if (stray)
    notes.push(
      `in ${stray} of ${rounds} "no view" rounds another nbagent view of the user's was connected to the host (${strangers.join(", ")} viewers): the NBAGENT_VIEW=0 row is the one without any; for a clean figure run the bench where no other view can see its hosts (${PRIVATE})`,
    );
  return {
    rows: [
      row("200-cell run, page open (Chromium) vs no view", median(paged), median(closed), "s", "≤ 1.05×"),
      row(
        "200-cell run, page open in a bare Chromium vs no view",
        median(bare),
        median(closed),
        "s",
        "≤ 1.05×",
      ),
      row("Chromium CPU, bare vs playwright", median(bareCpu), median(pageCpu), "ms", "info"),
      row("200-cell run, viewer open vs no view", median(open), median(closed), "s", "≤ 1.05×"),
      row("200-cell run, viewer open vs NBAGENT_VIEW=0", median(open), median(disabled), "s", "≤ 1.05×"),
      row("200-cell run, no view vs NBAGENT_VIEW=0", median(closed), median(disabled), "s", "info"),
      row("200-cell run, host CPU, viewer open vs no view", median(cpuOpen), median(cpuClosed), "ms", "info"),
      row("200-cell run, host CPU, open vs NBAGENT_VIEW=0", median(cpuOpen), median(cpuOff), "ms", "info"),
    ],
    notes,
  };
}

interface Mem {
  startMb: number;
  peakMb: number;
  endMb: number;
  viewStartMb?: number;
  viewPeakMb?: number;
  /** What the viewer that did not read got once it read again (socket), or whether the view let it go (SSE). */
  viewer?: string;
}

async function memoryCase(root: string, code: string, viewer: "none" | "socket" | "sse"): Promise<Mem> {
  const host = await startHost(root);
  let view: View | undefined;
  let reader: Sse | undefined;
  let raw: Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  const got = { messages: 0, snapshots: 0, lines: 0, skipped: 0 };
  let ended!: () => void;
  const callEnded = new Promise<void>((resolve) => {
    ended = resolve;
  });
  try {
    await host.call("python", { cells: [{ code: "1" }] }); // kernel start
    if (viewer === "socket") {
      raw = await rawViewer(host.socket!, (m) => {
        got.messages++;
        if (m.type === "snapshot") got.snapshots++;
        if (m.type === "event" && m.event?.output?.kind === "stream") {
          got.lines += (m.event.output.text ?? "").split("\n").length - 1;
          got.skipped += m.event.output.skippedLines ?? 0;
        }
        if (m.type === "event" && m.event?.type === "call-ended") ended();
        // Events were dropped for it: the fresh snapshot says whether the call ended meanwhile.
        const calls = (m as { calls?: { ended?: unknown }[] }).calls;
        if (m.type === "snapshot" && got.snapshots > 1 && calls?.[calls.length - 1]?.ended) ended();
      });
      raw.pause(); // reads nothing while the cell prints
    } else if (viewer === "sse") {
      view = await startView();
      reader = await sse(view, () => {});
      await reader.until((m) => m.type === "snapshot" && m.hostId === host.hostId);
      reader.res.pause(); // reads nothing while the cell prints
    }
    const start = rssKb(host.pid);
    let peak = start;
    const viewStart = view ? rssKb(view.proc.pid!) : 0;
    let viewPeak = viewStart;
    timer = setInterval(() => {
      peak = Math.max(peak, rssKb(host.pid));
      if (view) viewPeak = Math.max(viewPeak, rssKb(view.proc.pid!));
    }, 20);
    await host.call("python", { cells: [{ code }], wait: 3600 });
    clearInterval(timer);
    const end = rssKb(host.pid);
    peak = Math.max(peak, end);
    let said: string | undefined;
    if (raw) {
      raw.resume();
      await callEnded;
      said = `once it read: ${got.messages} messages, ${got.snapshots} snapshots, ${got.lines} stream lines (${got.skipped} left out)`;
    } else if (reader) {
      // Reading again: the rest of the stream up to the call's end, or the end of a connection the view let go.
      const r = reader;
      const gone = new Promise<boolean>((resolve) => r.res.once("close", () => resolve(true)));
      const rest = r
        .until((m) => m.hostId === host.hostId && m.type === "event" && m.event?.type === "call-ended")
        .then(() => false);
      r.res.resume();
      const letGo = await Promise.race([gone, rest]);
      said = letGo
        ? "the view let the paused reader go (over 4 MiB unsent; a page's EventSource reconnects)"
        : "the paused reader was still connected and got the rest once it read";
    }
    return {
      startMb: start / 1024,
      peakMb: peak / 1024,
      endMb: end / 1024,
      ...(view ? { viewStartMb: viewStart / 1024, viewPeakMb: viewPeak / 1024 } : {}),
      ...(said ? { viewer: said } : {}),
    };
  } finally {
    clearInterval(timer);
    reader?.close();
    raw?.destroy();
    await view?.stop();
    await host.close();
  }
}

async function memory(root: string): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const cases = {
    "100k lines": "for i in range(100_000):\n    print(i)",
    "100k lines of 1 KB": "line = 'x' * 1023\nfor i in range(100_000):\n    print(line)",
  };
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  const f = (x: number) => x.toFixed(0);
  for (const [name, code] of Object.entries(cases)) {
    const none = await memoryCase(join(root, "m-none"), code, "none");
    const socket = await memoryCase(join(root, "m-socket"), code, "socket");
    const sseCase = await memoryCase(join(root, "m-sse"), code, "sse");
    const growth = (m: Mem) => m.peakMb - m.startMb;
    rows.push(
      row(`${name}: host RSS growth, socket viewer not reading`, growth(socket), growth(none), "MB", "info"),
      row(`${name}: host RSS growth, SSE reader paused`, growth(sseCase), growth(none), "MB", "info"),
    );
    notes.push(
      `${name}: host RSS start/peak/end MB — no viewer ${f(none.startMb)}/${f(none.peakMb)}/${f(none.endMb)}; raw socket viewer not reading ${f(socket.startMb)}/${f(socket.peakMb)}/${f(socket.endMb)}; nbagent view with a paused SSE reader ${f(sseCase.startMb)}/${f(sseCase.peakMb)}/${f(sseCase.endMb)} (nbagent view's own RSS ${f(sseCase.viewStartMb ?? Number.NaN)} → peak ${f(sseCase.viewPeakMb ?? Number.NaN)} MB)`,
      `${name}: the socket viewer, ${socket.viewer}; SSE: ${sseCase.viewer}`,
    );
  }
  return { rows, notes };
}

export async function run(): Promise<BenchSection> {
  if (!existsSync(MAIN)) throw new Error("build first: npm run build");
  if (!viewSocketDir()) throw new Error("no socket root (/tmp/nbagent-ipc-<uid>): hosts have no view socket");
  const rounds = arg("rounds", 5);
  const lines = arg("lines", 400);
  const root = mkdtempSync(join(tmpdir(), "nbagent-bench-view-"));
  const only = (process.env.NBAGENT_BENCH_VIEW ?? "latency,page,run,memory").split(",");
  try {
    const parts: { rows: BenchRow[]; notes: string[] }[] = [];
    if (only.includes("latency")) parts.push(await latency(join(root, "lat"), lines));
    if (only.includes("page")) parts.push(await pageLatency(join(root, "page"), lines));
    if (only.includes("run")) parts.push(await runCost(root, rounds));
    if (only.includes("memory")) parts.push(await memory(root));
    return {
      title: "nbagent view: output → viewer latency, a 200-cell run watched, host memory with a slow viewer",
      rows: parts.flatMap((p) => p.rows),
      notes: [
        ...parts.flatMap((p) => p.notes),
        `machine: ${execFileSync("nproc", { encoding: "utf8" }).trim()} cores, load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")} at the end`,
      ],
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  run().then((s) => console.log(JSON.stringify(s, null, 2)));
