/**
 * Whole-notebook runs: `nbagent run -o DIR` (the built CLI, as a user runs it) vs nbclient
 * (../shared/anchors/nbclient_run.py -o) on the same set of notebooks — the run corpus of
 * test/fixtures/make_run_corpus.py (8 notebooks: streams, displays, matplotlib, pandas, errors, tags…).
 * Total wall time of one command each, alternating, medians of --rounds (default 3); ours with
 * --prestart 1 and --prestart 2 (kernels started ahead while a notebook runs).
 * Usage: node --import tsx bench/notebook-run.ts [--rounds 3]
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { nbclientRun } from "./anchors.js";
import { arg, type BenchSection, median, row } from "./types.js";

const execFileP = promisify(execFile);
const MAIN = "dist/cli/nbagent.js";

interface OurRun {
  total: number;
  /** Per notebook, from when its turn came (waiting for its kernel included) to its last save. */
  perNotebook: number[];
}

async function ours(notebooks: string[], out: string, prestart: number): Promise<OurRun> {
  const t0 = performance.now();
  const { stderr } = await execFileP(
    process.execPath,
    [MAIN, "run", "--allow-errors", "--prestart", String(prestart), "-o", out, ...notebooks],
    { maxBuffer: 1 << 24, timeout: 900_000 },
  );
  const total = (performance.now() - t0) / 1000;
  const perNotebook = [...stderr.matchAll(/ran \d+ cells in ([\d.]+)s/g)].map((m) => Number(m[1]));
  if (perNotebook.length !== notebooks.length) throw new Error(`unexpected nbagent run output:\n${stderr}`);
  return { total, perNotebook };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Two probes that split the total: one 1-cell notebook (process + kernel start + shutdown) and one
 * notebook of 100 trivial cells (per-cell overhead: execute round trip, collector, save per cell). */
async function writeProbes(dir: string): Promise<{ one: string; many: string }> {
  const code =
    "import sys, nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell\n" +
    "for path, n in ((sys.argv[1], 1), (sys.argv[2], 100)):\n" +
    "    nb = new_notebook(cells=[new_code_cell(f'x = {i}') for i in range(n)])\n" +
    "    nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}\n" +
    "    nbformat.write(nb, path)\n";
  await mkdir(dir);
  const one = join(dir, "one_cell.ipynb");
  const many = join(dir, "hundred_cells.ipynb");
  await execFileP("/usr/bin/python3", ["-c", code, one, many]);
  return { one, many };
}

export async function run(): Promise<BenchSection> {
  if (!existsSync(MAIN)) throw new Error("build first: npm run build");
  const rounds = arg("rounds", 3);
  const dir = await mkdtemp(join(tmpdir(), "nbagent-bench-run-"));
  try {
    const input = join(dir, "in");
    await execFileP("/usr/bin/python3", ["test/fixtures/make_run_corpus.py", input]);
    const notebooks = (await readdir(input))
      .filter((n) => n.endsWith(".ipynb"))
      .sort()
      .map((n) => join(input, n));
    const probes = await writeProbes(join(dir, "probes"));
    const probe: Record<string, { ours: number[]; ref: number[] }> = {
      one: { ours: [], ref: [] },
      many: { ours: [], ref: [] },
    };
    const ref: number[] = [];
    const refSum: number[] = [];
    const p1: OurRun[] = [];
    const p2: OurRun[] = [];
    for (let i = 0; i < rounds; i++) {
      const o = (name: string) => join(dir, `${name}-${i}`);
      for (const name of ["nbclient", "p1", "p2"]) await mkdir(o(name));
      // Alternate the order per round so neither side always runs on a warmer machine.
      const steps = [
        async () => {
          const t0 = performance.now();
          const r = await nbclientRun(["-o", o("nbclient"), ...notebooks]);
          ref.push((performance.now() - t0) / 1000);
          refSum.push(sum(Object.values(r.seconds)));
        },
        async () => {
          p1.push(await ours(notebooks, o("p1"), 1));
        },
        async () => {
          p2.push(await ours(notebooks, o("p2"), 2));
        },
      ];
      for (const key of ["one", "many"] as const) {
        const nb = probes[key];
        const pOut = o(`probe-${key}`);
        await mkdir(pOut);
        steps.push(async () => {
          const t0 = performance.now();
          await nbclientRun(["-o", pOut, nb]);
          probe[key].ref.push((performance.now() - t0) / 1000);
          probe[key].ours.push((await ours([nb], pOut, 1)).total);
        });
      }
      if (i % 2) steps.reverse();
      for (const step of steps) await step();
    }
    const refTotal = median(ref);
    const t1 = median(p1.map((r) => r.total));
    const t2 = median(p2.map((r) => r.total));
    const perNb = (runs: OurRun[]) => median(runs.map((r) => sum(r.perNotebook)));
    return {
      title: `Whole-notebook runs (${notebooks.length} notebooks: nbagent run -o DIR vs nbclient)`,
      rows: [
        row("nbagent run --prestart 1, total wall", t1, refTotal, "s", "≤ 0.7×"),
        row("nbagent run --prestart 2, total wall", t2, refTotal, "s", "≤ 0.7×"),
        row(
          "probe: one 1-cell notebook (start+shutdown)",
          median(probe.one.ours),
          median(probe.one.ref),
          "s",
          "info",
        ),
        row("probe: one 100-cell notebook", median(probe.many.ours), median(probe.many.ref), "s", "info"),
      ],
      notes: [
        `${rounds} alternating rounds; medians. Wall time of the whole command (process start to exit), both writing every notebook.`,
        `nbclient: sum of per-notebook execute() (kernel start + cells + shutdown) ${refSum.length ? median(refSum).toFixed(2) : "?"}s of ${refTotal.toFixed(2)}s total (rest: Python/nbclient import, writes).`,
        `ours: sum of per-notebook turns (waiting for its kernel + cells + saves) p1 ${perNb(p1).toFixed(2)}s / p2 ${perNb(p2).toFixed(2)}s; the rest of the total is node start and the last kernels' shutdown.`,
      ],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  run().then((s) => console.log(JSON.stringify(s, null, 2)));
