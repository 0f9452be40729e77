/**
 * `nbagent run NOTEBOOK… [-o OUT | --inplace] [--timeout S] [--allow-errors] [--cwd DIR] [--kernel NAME]`
 * Executes every cell top to bottom in a fresh kernel per notebook and writes the outputs back
 * (default in place). Exit 0 when every notebook ran clean, 1 when a cell failed (unless
 * --allow-errors) or a notebook could not be run, 2 on usage errors.
 * The kernels get the host environment unchanged, as with jupyter/nbclient: this is the user's run.
 */
import { existsSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createLocalBackend } from "../kernel/index.js";
import type { CellRunReport } from "../runtime/notebook-run.js";
import { type NotebookJob, runNotebooks } from "../runtime/run-notebooks.js";
import type { Command } from "./commands.js";
import { withInterruptSignal } from "./signals.js";

const USAGE =
  "usage: nbagent run NOTEBOOK... [-o OUT | --inplace] [--timeout S] [--allow-errors] [--cwd DIR] [--kernel NAME] [--python PATH] [--prestart N] [--quiet]\n" +
  "  -o OUT        an .ipynb path (one notebook) or a directory (several); default: write back in place\n" +
  "  --prestart N  kernels started ahead for the next notebooks while one runs (default 1)\n";

export const runCommand: Command = {
  summary: "run whole notebooks top to bottom in fresh kernels, writing outputs back (like nbclient)",
  async run(args) {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(args);
    } catch (err) {
      process.stderr.write(`nbagent run: ${(err as Error).message}\n${USAGE}`);
      return 2;
    }
    const { jobs, values } = parsed;
    const backend = createLocalBackend();
    const env = process.env as Record<string, string>;
    // Several notebooks: warm the kernel fork server now, so every kernel after the first forks (~0.3 s).
    if (jobs.length > 1) await backend.prewarm({ kernelName: values.kernel, python: values.python, env });
    const tty = process.stderr.isTTY === true && !values.quiet;
    const codeCells = new Map<NotebookJob, number>();
    const done = new Map<NotebookJob, number>();
    const progress = (job: NotebookJob, report: CellRunReport) => {
      if (values.quiet) return;
      if (report.status === "skipped" || report.status === "not-run") return;
      const n = (done.get(job) ?? 0) + 1;
      done.set(job, n);
      const mark = report.status === "ok" ? "ok" : report.status;
      const secs = (report.durationMs / 1000).toFixed(2);
      const line = `${basename(job.input)} [${n}/${codeCells.get(job) ?? "?"}] cell ${report.index} ${mark} ${secs}s`;
      if (tty) process.stderr.write(`\r\x1b[2K${line}${report.status === "ok" ? "" : "\n"}`);
      else if (report.status !== "ok") process.stderr.write(`${line}\n`);
    };
    try {
      const results = await withInterruptSignal((signal) =>
        runNotebooks({
          jobs,
          backend,
          cwd: values.cwd ? resolve(values.cwd) : undefined,
          kernelName: values.kernel,
          python: values.python,
          env,
          allowErrors: values["allow-errors"] === true,
          prestart: values.prestart === undefined ? undefined : Number(values.prestart),
          cellTimeoutMs: values.timeout ? Number(values.timeout) * 1000 : undefined,
          signal,
          onNotebookStart: (job, n) => codeCells.set(job, n),
          onNotice: (job, notice) => {
            if (tty) process.stderr.write("\r\x1b[2K");
            process.stderr.write(`${basename(job.input)}: ${notice}\n`);
          },
          onCellEnd: progress,
        }),
      );
      if (tty) process.stderr.write("\r\x1b[2K");
      let failed = false;
      for (const r of results) {
        const cells = r.result?.cells ?? [];
        const ran = cells.filter((c) => c.status !== "skipped" && c.status !== "not-run").length;
        // A raises-exception cell's error is expected: not a failure (as with nbclient).
        const errors = cells.filter(
          (c) => (c.status === "error" && !c.expectedError) || c.status === "aborted",
        );
        let line: string;
        if (r.error) {
          failed = true;
          line = `Error: ${basename(r.job.input)}: ${r.error.replace(/^Error:\s*/, "")}`;
        } else {
          const stoppedNote = r.result?.stopped ? `; stopped: ${r.result.stopReason}` : "";
          line = `${r.job.output}: ran ${ran} cells in ${r.seconds.toFixed(2)}s, ${errors.length} failed${stoppedNote}`;
          if (errors.length && (r.result?.stopped || values["allow-errors"] !== true)) failed = true;
        }
        if (!values.quiet || r.error) process.stderr.write(`${line}\n`);
      }
      return failed ? 1 : 0;
    } finally {
      await backend.dispose();
    }
  },
};

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      output: { type: "string", short: "o" },
      inplace: { type: "boolean" },
      timeout: { type: "string" },
      "allow-errors": { type: "boolean" },
      cwd: { type: "string" },
      kernel: { type: "string" },
      python: { type: "string" },
      quiet: { type: "boolean", short: "q" },
      prestart: { type: "string" },
    },
  });
  if (positionals.length === 0) throw new Error("no notebook given");
  if (values.output && values.inplace) throw new Error("-o and --inplace exclude each other");
  if (values.timeout !== undefined && !(Number(values.timeout) > 0)) {
    throw new Error(`--timeout must be a positive number of seconds, got ${values.timeout}`);
  }
  if (values.prestart !== undefined && !/^\d+$/.test(values.prestart)) {
    throw new Error(`--prestart must be a whole number of notebooks, got ${values.prestart}`);
  }
  if (values.cwd && !isDir(values.cwd)) throw new Error(`--cwd is not a directory: ${values.cwd}`);
  for (const p of positionals) {
    if (!existsSync(p)) throw new Error(`notebook not found: ${p}`);
  }
  const out = values.output;
  const outIsFile = out?.endsWith(".ipynb") && !isDir(out);
  if (outIsFile && positionals.length > 1)
    throw new Error("-o names one file but several notebooks were given; give a directory");
  if (out && !outIsFile && !isDir(out)) throw new Error(`-o directory does not exist: ${out}`);
  const jobs: NotebookJob[] = positionals.map((p) => ({
    input: resolve(p),
    output: out === undefined ? resolve(p) : outIsFile ? resolve(out) : resolve(join(out, basename(p))),
  }));
  const seen = new Set<string>();
  for (const job of jobs) {
    if (seen.has(job.output)) throw new Error(`two notebooks would write the same file: ${job.output}`);
    seen.add(job.output);
  }
  return { jobs, values };
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
