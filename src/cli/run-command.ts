/**
 * `nbagent run NOTEBOOK… [-o OUT | --inplace] [--timeout S] [--allow-errors] [--cwd DIR] [--kernel NAME]`
 * Executes every cell top to bottom in a fresh kernel per notebook and writes the outputs back
 * (default in place). Each input is read and checked before anything is written for it; a failing
 * cell's traceback is printed. Exit codes and rules: HELP below and docs/cli.md.
 * The kernels get the host environment unchanged, as with jupyter/nbclient: this is the user's run.
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { LocalBackend } from "../kernel/local/backend.js";
import { type Cell, loadNotebook, NotebookFileError } from "../notebook/index.js";
import { createKernelProvider } from "../runtime/kernel-provider.js";
import { type CellRunReport, cellRanInRun } from "../runtime/notebook-run.js";
import { type NotebookJob, runNotebooks } from "../runtime/run-notebooks.js";
import { describeFailure } from "../tools/failure-text.js";
import { repairedIdsText } from "../tools/notebook/problems.js";
import { errorText, failureText } from "../tools/types.js";
import type { Command } from "./command.js";
import { interruptExitCode, withInterruptSignal } from "./posix-signals.js";
import { formatCellFailure, NO_REPLY, wentIdleWithoutReply } from "./run-failure.js";
import { RunProgress } from "./run-progress.js";
import { parsedOrUsage } from "./usage.js";

const USAGE =
  "usage: nbagent run NOTEBOOK... [-o OUT | --inplace] [--timeout S] [--allow-errors] [--cwd DIR] [--kernel NAME] [--python PATH] [-j N] [--prestart N] [--gateway URL] [--quiet]";

const HELP = `nbagent run — run whole notebooks top to bottom in fresh kernels, writing outputs back (like nbclient)

${USAGE}

Each notebook runs in a fresh kernel of its kernelspec (a Python one not installed here: python3,
with a notice), in the notebook's folder; code cells run in order and the file is saved after each
one. A failing cell stops its notebook (unless --allow-errors, or the cell is tagged
raises-exception) and its source and traceback are printed on stderr. Cells are numbered from 0,
as the notebook tool's cell_index. Each input is read and checked (JSON, nbformat 4) before its
output is written: a notebook that cannot be read is reported as the input's fault, is not run,
and its output file is left as it was; the other notebooks still run.

options:
  -o, --output OUT  an .ipynb file (one notebook) or an existing directory (several);
                    default: write each notebook back in place
  --inplace         write back in place (the default)
  --timeout S       seconds each cell may run (default: no bound)
  --allow-errors    go on after a failing cell; such errors do not fail the command
  --cwd DIR         the kernels' working directory (default: each notebook's folder)
  --kernel NAME     this kernelspec instead of each notebook's own
  --python PATH     the interpreter for Python kernels (default: the one nbagent doctor names)
  -j, --jobs N      run N notebooks at once, each in its own kernel (default 1; at most the
                    number of notebooks); progress lines then name their notebook
  --prestart N      kernels started ahead for the next notebooks while one runs (default 1)
  --gateway URL     run the kernels on this Jupyter server or Enterprise Gateway (same as
                    NBAGENT_GATEWAY_URL; token NBAGENT_GATEWAY_TOKEN or --gateway-token-file F);
                    with -j N a batch spreads over its kernels. Their environment is this one
                    without secrets; their working directory is asked for as each notebook's folder
  -q, --quiet       no progress and no summary: only errors

exit: 0 every notebook ran and no cell failed; 1 a cell failed, a cell timed out or its kernel
      died, or a notebook could not be read, run or written; 2 usage (nothing was run).

examples:
  nbagent run analysis.ipynb
  nbagent run --timeout 600 -o executed/ a.ipynb b.ipynb
  nbagent run -j 4 notebooks/*.ipynb
  NBAGENT_GATEWAY_TOKEN=… nbagent run --gateway https://gw.example:8888 -j 8 *.ipynb
`;

export const runCommand: Command = {
  help: HELP,
  async run(args, settings) {
    const parsed = parsedOrUsage("run", USAGE, parse, args);
    if (parsed === undefined) return 2;
    const { values } = parsed;
    // Local kernels, or a gateway's (--gateway URL / NBAGENT_GATEWAY_URL; docs/cli.md), made where
    // every kernel is made (kernel-provider.ts). Local kernels get the host environment unchanged
    // (the user's run, as nbclient); a gateway's kernels run elsewhere, so their create request
    // carries it without secrets (docs/secrets.md).
    const kernels = createKernelProvider({
      python: values.python,
      kernelName: values.kernel,
      settings,
      stateRoot: settings.stateRoot,
      localEnvironment: "host",
    });
    // Settings that cannot be honoured together (--sandbox with a gateway): nothing is read or run.
    if (kernels.refusal) {
      process.stderr.write(`${errorText(kernels.refusal)}\nNothing was run.\n`);
      return 2;
    }
    const shown = new Map(parsed.jobs.map((job, i) => [job, parsed.given[i]]));
    // An unreadable input is named as given; progress and results name a notebook by its file name.
    const name = (job: NotebookJob) => shown.get(job) ?? job.input;
    const short = (job: NotebookJob) => basename(job.input);
    // Every input is read and checked before anything is written for it (docs/cli.md).
    const sources = new Map<NotebookJob, string[]>();
    const unreadable: string[] = [];
    const upgraded: string[] = [];
    const jobs: NotebookJob[] = [];
    for (const job of parsed.jobs) {
      try {
        const loaded = await loadNotebook(job.input, name(job));
        sources.set(job, loaded.notebook.cells.map(sourceOf));
        jobs.push(job);
        if (loaded.upgradedFrom !== undefined) {
          // docs/notebook-tool.md ("nbformat 3 notebooks"): a run saves its outputs, so as 4.5.
          const where =
            job.output === job.input ? "it is saved" : `${outputName(job, values.output)} is written`;
          upgraded.push(
            `Note: ${name(job)} is an nbformat ${loaded.upgradedFrom} notebook; it was upgraded to nbformat 4.5 as Jupyter does, and ${where} as 4.5.`,
          );
        }
      } catch (err) {
        if (!(err instanceof NotebookFileError)) throw err;
        const reason = err.reason && !err.message.includes(err.reason) ? ` (${err.reason})` : "";
        const untouched =
          job.output === job.input
            ? "the file was not changed"
            : `${outputName(job, values.output)} was not written`;
        unreadable.push(errorText(`input ${name(job)}: ${err.message}${reason}. Not run; ${untouched}.`));
      }
    }
    for (const line of unreadable) process.stderr.write(`${line}\n`);
    for (const line of upgraded) process.stderr.write(`${line}\n`);
    if (jobs.length === 0) return 1;

    const { backend } = await kernels.backend();
    if (kernels.facts.remote) {
      // One clear error for an unreachable server or a refused token, before any notebook is touched.
      try {
        await backend.kernelSpecNames({});
      } catch (err) {
        await kernels.dispose();
        process.stderr.write(`${failureText(err)}\nNothing was run.\n`);
        return 1;
      }
    } else if (jobs.length > 1 && !kernels.sandbox && backend instanceof LocalBackend) {
      // Several notebooks: warm the kernel fork server now, so every kernel after the first forks
      // (~0.3 s). Sandboxed kernels are never forked (docs/isolation.md).
      await backend.prewarm({
        kernelName: values.kernel,
        python: values.python,
        env: kernels.kernelEnv().env,
      });
    }
    const tty = process.stderr.isTTY === true && !values.quiet;
    const color = process.stderr.isTTY === true && !process.env.NO_COLOR;
    const allowErrors = values["allow-errors"] === true;
    const codeCells = new Map<NotebookJob, number>();
    const done = new Map<NotebookJob, number>();
    // Per-cell progress on stderr: a live list on a terminal, plain lines otherwise (run-progress.ts).
    const concurrency = values.jobs === undefined ? 1 : Math.min(Number(values.jobs), jobs.length);
    const progressView = new RunProgress({
      tty,
      color,
      write: (text) => process.stderr.write(text),
      parallel: concurrency > 1,
      columns: process.stderr.columns,
    });
    const progress = (job: NotebookJob, report: CellRunReport) => {
      if (!cellRanInRun(report)) return;
      const n = (done.get(job) ?? 0) + 1;
      done.set(job, n);
      const stops =
        report.status === "aborted" || (report.status === "error" && !report.expectedError && !allowErrors);
      if (!values.quiet) {
        const error = report.result?.error;
        let what = report.status === "error" && error ? `: ${error.name}: ${firstLine(error.value)}` : "";
        if (wentIdleWithoutReply(report))
          what = error?.name === "NoReply" ? `: ${NO_REPLY}` : `${what.replace(/\.$/, "")}; ${NO_REPLY}`;
        progressView.cellEnd(short(job), n, codeCells.get(job) ?? 0, report, what);
      }
      if (stops) {
        const source = sources.get(job)?.[report.index] ?? "";
        progressView.print(formatCellFailure(report, { notebook: short(job), source, color }));
      }
    };
    try {
      let interrupted: number | undefined;
      const results = await withInterruptSignal((signal) => {
        signal.addEventListener("abort", () => {
          interrupted = interruptExitCode(signal);
        });
        return runNotebooks({
          jobs,
          kernels,
          cwd: values.cwd ? resolve(values.cwd) : undefined,
          kernelName: values.kernel,
          allowErrors,
          prestart: values.prestart === undefined ? undefined : Number(values.prestart),
          concurrency,
          cellTimeoutMs: values.timeout ? Number(values.timeout) * 1000 : undefined,
          signal,
          onNotebookStart: (job, n) => {
            codeCells.set(job, n);
            if (!values.quiet) progressView.notebookStart(short(job), n);
          },
          onNotice: (job, notice) => progressView.print(`${short(job)}: ${notice}\n`),
          onCellStart: (job, index) =>
            progressView.cellStart(short(job), index, (done.get(job) ?? 0) + 1, codeCells.get(job) ?? 0),
          onCellEnd: progress,
        });
      });
      progressView.stop();
      let failed = unreadable.length > 0;
      for (const r of results) {
        const cells = r.result?.cells ?? [];
        const ran = cells.filter(cellRanInRun).length;
        // A raises-exception cell's error is expected: not a failure (as with nbclient).
        const errors = cells.filter(
          (c) => (c.status === "error" && !c.expectedError) || c.status === "aborted",
        );
        let line: string;
        if (r.error) {
          failed = true;
          line = errorText(`${short(r.job)}: ${describeFailure(r.failure ?? r.error)}`);
        } else {
          const stoppedNote = r.result?.stopped ? `; stopped: ${r.result.stopReason}` : "";
          line = `${r.job.output}: ran ${ran} cells in ${r.seconds.toFixed(2)}s, ${errors.length} failed${stoppedNote}`;
          if (errors.length && (r.result?.stopped || !allowErrors)) failed = true;
          line += mergeNote(cells, r.result?.merges ?? 0);
          const repaired = repairedIdsText(r.result?.repairedIds ?? []);
          if (repaired) line += `; ${repaired}`;
          if (r.result?.saveError) {
            failed = true;
            line += `\n${errorText(`${short(r.job)}: the outputs of the cells that ran since the last save are not in the file: ${r.result.saveError.message}`)}`;
          }
        }
        if (!values.quiet || r.error) process.stderr.write(`${line}\n`);
      }
      // Interrupted: the notebooks were written as far as they ran; say so in the status (docs/cli.md).
      return interrupted ?? (failed ? 1 : 0);
    } finally {
      progressView.stop();
      await kernels.dispose();
    }
  },
};

/**
 * What the summary adds when the file changed on disk during the run, and for cells whose kernel went
 * idle without replying (docs/cli.md).
 */
function mergeNote(cells: CellRunReport[], merges: number): string {
  const parts: string[] = [];
  if (merges > 0)
    parts.push(
      "the file changed on disk during the run: outputs were merged into it by cell id, the other changes kept",
    );
  const at = (c: CellRunReport) => `cell ${c.index}${c.id ? ` (id ${c.id})` : ""}`;
  for (const c of cells) {
    if (c.status === "deleted") parts.push(`${at(c)} was not run: ${c.reason}`);
    if (c.notSaved === "deleted")
      parts.push(`${at(c)} was deleted while it ran: its outputs are not in the file`);
    if (c.notSaved === "no-ids")
      parts.push(`${at(c)}'s outputs are not in the file: the cells have no ids and their count changed`);
    if (wentIdleWithoutReply(c)) parts.push(`${at(c)}: ${NO_REPLY}`);
    if (c.editedWhileRunning)
      parts.push(`${at(c)} was edited while it ran: its outputs are those of the old code`);
  }
  return parts.length ? `; ${parts.join("; ")}` : "";
}

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
      jobs: { type: "string", short: "j" },
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
  if (values.jobs !== undefined && !/^[1-9]\d*$/.test(values.jobs)) {
    throw new Error(`-j must be a whole number of notebooks (1 or more), got ${values.jobs}`);
  }
  if (values.cwd && !isDir(values.cwd)) throw new Error(`--cwd is not a directory: ${values.cwd}`);
  for (const p of positionals) {
    if (!existsSync(p)) throw new Error(`input notebook not found: ${p}`);
  }
  const out = values.output;
  const outIsFile = out?.endsWith(".ipynb") && !isDir(out);
  if (outIsFile && positionals.length > 1)
    throw new Error("-o names one file but several notebooks were given; give a directory");
  if (out && !outIsFile && !isDir(out)) throw new Error(`-o directory does not exist: ${out}`);
  if (out) {
    const dir = outIsFile ? dirname(resolve(out)) : resolve(out);
    try {
      accessSync(dir, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new Error(
        code === "ENOENT"
          ? `-o ${out}: its directory does not exist: ${dir}`
          : `-o ${out}: cannot write in ${dir} (${code})`,
      );
    }
  }
  const jobs: NotebookJob[] = positionals.map((p) => ({
    input: resolve(p),
    output: out === undefined ? resolve(p) : outIsFile ? resolve(out) : resolve(join(out, basename(p))),
  }));
  const seen = new Set<string>();
  for (const job of jobs) {
    if (seen.has(job.output)) throw new Error(`two notebooks would write the same file: ${job.output}`);
    seen.add(job.output);
  }
  return { jobs, given: positionals, values };
}

/** How an output file is named in messages: as given with -o (a file, or DIR/name). */
function outputName(job: NotebookJob, out: string | undefined): string {
  if (out === undefined) return job.output;
  return out.endsWith(".ipynb") && !isDir(out) ? out : join(out, basename(job.output));
}

function sourceOf(cell: Cell): string {
  const s = cell.source as unknown;
  return Array.isArray(s) ? s.join("") : typeof s === "string" ? s : "";
}

function firstLine(s: string): string {
  const line = s.split("\n", 1)[0];
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
