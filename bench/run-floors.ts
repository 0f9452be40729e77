/**
 * Where whole-notebook runs sit against their floors (issue 22): 40 small notebooks run `-j 4` vs the
 * same run at `-j 1` and at `-j 2` (more jobs must never be slower) (parallel runs were CPU-bound on kernel teardown: forked kernels now end with
 * os._exit after their exit handlers, docs/reliability.md), and one 200-cell notebook of quick cells vs
 * nbclient (a save after every cell made it level with nbclient: saves are now coalesced,
 * docs/runs.md), and a 1,000-cell notebook of trivial cells vs nbclient (issue 34: cells are
 * pipelined, docs/runs.md "Pipelined cells"). The built CLI (dist/), as a user runs it; alternating
 * rounds, medians.
 * Usage: node --import tsx bench/run-floors.ts [--rounds 3] [--rounds200 7] [--rounds1000 5]
 * (or `npm run bench run-floors`)
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createLocalBackend } from "../src/kernel/index.js";
import { streamGuardScript } from "../src/runtime/init.js";
import { nbclientRun } from "./anchors.js";
import { arg, type BenchSection, median, row } from "./types.js";

const execFileP = promisify(execFile);
const MAIN = "dist/cli/nbagent.js";

/** Wall seconds and CPU seconds (the command and every process it waited for: kernels, fork server). */
async function timed(args: string[]): Promise<{ wall: number; cpu: number }> {
  const t0 = performance.now();
  // bash's `time` reports the CPU of the command and of every process it waited for.
  const { stderr } = await execFileP(
    "/bin/bash",
    ["-c", 'TIMEFORMAT="user %U sys %S"; time "$@" >/dev/null 2>/dev/null', "bash", ...args],
    { maxBuffer: 1 << 24, timeout: 900_000 },
  ).catch((err) => {
    throw new Error(`${args.join(" ")} failed: ${(err as { stderr?: string }).stderr ?? err}`);
  });
  const wall = (performance.now() - t0) / 1000;
  const user = Number(/user\s+([\d.]+)/.exec(stderr)?.[1] ?? Number.NaN);
  const sys = Number(/sys\s+([\d.]+)/.exec(stderr)?.[1] ?? Number.NaN);
  return { wall, cpu: user + sys };
}

async function writeNotebooks(dir: string): Promise<{ small: string[]; long: string; trivial: string }> {
  const code =
    "import sys, os, nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell\n" +
    "spec = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}\n" +
    "d = sys.argv[1]\n" +
    "for i in range(40):\n" +
    "    nb = new_notebook(cells=[new_code_cell(f'x = {i}'), new_code_cell('print(x)'), new_code_cell('x * 2')])\n" +
    "    nb.metadata['kernelspec'] = spec\n" +
    "    nbformat.write(nb, os.path.join(d, f'small_{i:02d}.ipynb'))\n" +
    "nb = new_notebook(cells=[new_code_cell(f'print({i})' if i % 2 else f'y = {i}') for i in range(200)])\n" +
    "nb.metadata['kernelspec'] = spec\n" +
    "nbformat.write(nb, os.path.join(d, 'cells_200.ipynb'))\n" +
    "nb = new_notebook(cells=[new_code_cell(f'x = {i}') for i in range(1000)])\n" +
    "nb.metadata['kernelspec'] = spec\n" +
    "nbformat.write(nb, os.path.join(d, 'cells_1000.ipynb'))\n";
  await mkdir(dir, { recursive: true });
  await execFileP("/usr/bin/python3", ["-c", code, dir]);
  const small = Array.from({ length: 40 }, (_, i) => join(dir, `small_${String(i).padStart(2, "0")}.ipynb`));
  return { small, long: join(dir, "cells_200.ipynb"), trivial: join(dir, "cells_1000.ipynb") };
}

/**
 * The kernel's own floor under a notebook of trivial cells: 1,000 `x = i` requests through our client
 * alone (no notebook, no saves; the kernel set up as a run sets it up), each sent after the previous one's idle (how runs went before issue
 * 34), each at the previous one's reply (pipelining as it was first built), one more always waiting
 * in the kernel behind the one that runs, sent to run only after it (the guard's schedule, which a
 * run now keeps; docs/runs.md "Pipelined cells"), and all queued at once (no host in between at
 * all). Seconds, medians of alternating rounds.
 */
async function kernelFloors(
  rounds: number,
): Promise<{ idle: number; reply: number; behind: number; queued: number; dropped: number }> {
  const backend = await createLocalBackend({});
  const kernel = await backend.startKernel({ env: process.env as Record<string, string> });
  // The kernel as a run has it: the init code's output guards and quicker cell ends (docs/runs.md,
  // "Between cells").
  await kernel.execute(streamGuardScript(), { silent: true, storeHistory: false, keepText: false });
  const c = kernel.client;
  const request = (i: number, after?: string) =>
    c.factory.executeRequest(`x = ${i}`, {
      stopOnError: false,
      ...(after !== undefined && { metadata: { nbagent_after: after } }),
    });
  /** Requests the guard dropped in the `behind` rounds (each replaced), in all. */
  let dropped = 0;
  const modes = {
    idle: async () => {
      for (let i = 0; i < 1000; i++) await c.future("shell", request(i)).done;
    },
    reply: async () => {
      for (let i = 0; i < 1000; i++)
        await new Promise<void>((resolve) => c.future("shell", request(i), { onReply: () => resolve() }));
    },
    behind: async () => {
      // At each reply one more goes, after the last one sent; a request the kernel will drop (the
      // reply said so: the cell before it took over 20 ms) is replaced, as a run sends its cell again.
      let live = 0;
      let ran = 0;
      let last: string | undefined;
      let done!: () => void;
      const finished = new Promise<void>((resolve) => {
        done = resolve;
      });
      const send = (after?: string) => {
        if (live >= 1000) return;
        live++;
        const msg = request(live, after);
        const id = msg.header.msg_id;
        last = id;
        c.future("shell", msg, {
          onReply: (reply) => {
            if ((reply.content as { status?: string }).status === "aborted") return;
            if (++ran === 1000) done();
            const behindIt = last !== id;
            if (behindIt && (reply.metadata as { nbagent_next?: string }).nbagent_next !== "run") {
              live--;
              dropped++;
              send();
            } else if (!behindIt) send();
            send(last);
          },
        });
      };
      send();
      await finished;
    },
    queued: async () => {
      await Promise.all(Array.from({ length: 1000 }, (_, i) => c.future("shell", request(i)).done));
    },
  };
  const times = {
    idle: [] as number[],
    reply: [] as number[],
    behind: [] as number[],
    queued: [] as number[],
  };
  try {
    for (let r = 0; r < rounds; r++) {
      const order = (["idle", "reply", "behind", "queued"] as const).slice();
      for (let j = 0; j < r % 4; j++) order.push(order.shift()!);
      for (const mode of order) {
        const t0 = performance.now();
        await modes[mode]();
        times[mode].push((performance.now() - t0) / 1000);
      }
    }
  } finally {
    await kernel.shutdown();
  }
  return {
    idle: median(times.idle),
    reply: median(times.reply),
    behind: median(times.behind),
    queued: median(times.queued),
    dropped,
  };
}

export async function run(): Promise<BenchSection> {
  if (!existsSync(MAIN)) throw new Error("build first: npm run build");
  const rounds = arg("rounds", 3);
  const rounds200 = arg("rounds200", 7);
  const rounds1000 = arg("rounds1000", 5);
  const dir = await mkdtemp(join(tmpdir(), "nbagent-bench-floors-"));
  try {
    const { small, long, trivial } = await writeNotebooks(join(dir, "in"));
    const j1: { wall: number; cpu: number }[] = [];
    const j2: { wall: number; cpu: number }[] = [];
    const j4: { wall: number; cpu: number }[] = [];
    const ours200: number[] = [];
    const ref200: number[] = [];
    const ours1000: number[] = [];
    const ref1000: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const out = async (name: string) => {
        const o = join(dir, `${name}-${i}`);
        await mkdir(o);
        return o;
      };
      const jobs = (n: number, o: string) =>
        timed([process.execPath, MAIN, "run", "--quiet", "-j", String(n), "-o", o, ...small]);
      const steps = [
        async () => j1.push(await jobs(1, await out("j1"))),
        async () => j2.push(await jobs(2, await out("j2"))),
        async () => j4.push(await jobs(4, await out("j4"))),
      ];
      if (i % 2) steps.reverse();
      for (const step of steps) await step();
    }
    // The 200-cell pair takes a few seconds a round and swings ±10% from run to run on 2 cores:
    // more rounds of it than of the 40-notebook pair, for a steadier median.
    for (let i = 0; i < rounds200; i++) {
      const steps = [
        async () => {
          const o = join(dir, `ours200-${i}`);
          await mkdir(o);
          ours200.push((await timed([process.execPath, MAIN, "run", "--quiet", "-o", o, long])).wall);
        },
        async () => {
          const o = join(dir, `ref200-${i}`);
          await mkdir(o);
          const t0 = performance.now();
          await nbclientRun(["-o", o, long]);
          ref200.push((performance.now() - t0) / 1000);
        },
      ];
      if (i % 2) steps.reverse();
      for (const step of steps) await step();
    }
    // 1,000 trivial cells: the time between cells is most of it (issue 34, pipelined cells).
    for (let i = 0; i < rounds1000; i++) {
      const steps = [
        async () => {
          const o = join(dir, `ours1000-${i}`);
          await mkdir(o);
          ours1000.push((await timed([process.execPath, MAIN, "run", "--quiet", "-o", o, trivial])).wall);
        },
        async () => {
          const o = join(dir, `ref1000-${i}`);
          await mkdir(o);
          const t0 = performance.now();
          await nbclientRun(["-o", o, trivial]);
          ref1000.push((performance.now() - t0) / 1000);
        },
      ];
      if (i % 2) steps.reverse();
      for (const step of steps) await step();
    }
    const floors = await kernelFloors(rounds1000);
    const wall = (xs: { wall: number }[]) => median(xs.map((x) => x.wall));
    const cpu = (xs: { cpu: number }[]) => median(xs.map((x) => x.cpu));
    return {
      title:
        "Runs against their floors (40 small notebooks -j 4 vs -j 1; 200-cell and 1,000-cell notebooks vs nbclient)",
      rows: [
        row("40 small notebooks: nbagent run -j 4 vs -j 1, wall", wall(j4), wall(j1), "s", "≤ 0.6×"),
        // More jobs than free CPUs must never lose: -j 4 against -j 2 on the same (maybe loaded) machine.
        row("… -j 4 vs -j 2, wall", wall(j4), wall(j2), "s", "≤ 1.0×"),
        row("… CPU (user+sys, kernels included)", cpu(j4), cpu(j1), "s", "info"),
        row(
          "200-cell notebook: nbagent run vs nbclient_run.py",
          median(ours200),
          median(ref200),
          "s",
          "≤ 0.8×",
        ),
        row("1,000 trivial cells: nbagent run vs nbclient", median(ours1000), median(ref1000), "s", "≤ 0.6×"),
        row(
          "… kernel floor: 1,000 requests, each at the reply vs after idle",
          floors.reply,
          floors.idle,
          "s",
          "info",
        ),
        row(
          "… kernel floor: one always waiting behind the running one, guarded, vs after idle",
          floors.behind,
          floors.idle,
          "s",
          "info",
        ),
        row(
          "… kernel floor: all 1,000 queued at once vs after idle",
          floors.queued,
          floors.idle,
          "s",
          "info",
        ),
      ],
      notes: [
        `${rounds} alternating rounds of the 40 notebooks, ${rounds200} of the 200-cell notebook, ${rounds1000} of the 1,000-cell one; medians. Wall time of the whole command (process start to exit), each writing every notebook to its own folder (-o).`,
        "CPU: the shell's `time` of the command, which counts every process it waited for (kernels, the fork server).",
        `Kernel floor rows: ${rounds1000} alternating rounds of each schedule; in the guarded one the kernel dropped ${floors.dropped} requests in all (a trivial cell that took over 20 ms), each replaced.`,
      ],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  run().then((s) => console.log(JSON.stringify(s, null, 2)));
