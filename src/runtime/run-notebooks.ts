/**
 * Whole-notebook runs for people and CI (`nbagent run`): every cell top to bottom in a fresh kernel
 * per notebook, outputs written back (in place or to another path). `concurrency` notebooks run at
 * once, each in its own kernel (docs/cli.md); while they run, the kernels for the next ones are
 * already starting, so kernel start-up overlaps execution. Results come back in the jobs' order.
 */

import { dirname } from "node:path";
import { type Kernel, speaksPython } from "../kernel/types.js";
import { loadNotebook } from "../notebook/index.js";
import { copyFile } from "../sys/fs-promises.js";
import { DisplayRegistry } from "./collector.js";
import { SettingsError } from "./errors.js";
import { streamGuardScript } from "./init.js";
import type { KernelProvider } from "./kernel-provider.js";
import { type CellRunReport, type NotebookRunResult, runNotebookCells } from "./notebook-run.js";
import { chooseNotebookKernel, type NotebookKernelChoice } from "./notebook-session.js";

export interface NotebookJob {
  /** The notebook to run. */
  input: string;
  /** Where the executed notebook goes (same as input for in place). */
  output: string;
}

export interface RunNotebooksOptions {
  jobs: NotebookJob[];
  /**
   * Where the kernels come from, with their environment, sandbox (writable: their cwd and a temp
   * dir), confinement and limits (kernel-provider.ts).
   */
  kernels: KernelProvider;
  /** Kernel working directory (default: each input notebook's directory, as nbclient does). */
  cwd?: string;
  /** Kernelspec name (default: the notebook's metadata.kernelspec.name, else python3). */
  kernelName?: string;
  allowErrors?: boolean;
  /** How many notebooks ahead get their kernel started while the running ones run (default 1). */
  prestart?: number;
  /** How many notebooks run at once, each in its own kernel (default 1; at most the number of jobs). */
  concurrency?: number;
  /** Per-cell bound in ms. */
  cellTimeoutMs?: number;
  recordTiming?: boolean;
  signal?: AbortSignal;
  onNotebookStart?: (job: NotebookJob, codeCells: number) => void;
  onCellStart?: (job: NotebookJob, index: number) => void;
  onCellEnd?: (job: NotebookJob, report: CellRunReport) => void;
  /** Something the user should know about a notebook's run (its kernelspec was replaced). */
  onNotice?: (job: NotebookJob, notice: string) => void;
}

export interface NotebookJobResult {
  job: NotebookJob;
  result?: NotebookRunResult;
  /** A failure outside the cells (unreadable notebook, kernel failed to start, save refused), for logs. */
  error?: string;
  /** That failure as thrown (a typed KernelStartError, …): tools/failure-text.ts words it. */
  failure?: unknown;
  seconds: number;
}

export async function runNotebooks(options: RunNotebooksOptions): Promise<NotebookJobResult[]> {
  // Settings that cannot be honoured together: refused before any notebook or output is touched.
  if (options.kernels.refusal) throw new SettingsError("conflict", options.kernels.refusal);
  const jobs = options.jobs;
  const results: NotebookJobResult[] = new Array(jobs.length);
  // A finished notebook's kernel shuts down while the next notebook runs.
  const shutdowns: Promise<void>[] = [];
  // Each job's notebook is loaded (and copied to its output) first so its kernelspec is known before its kernel starts.
  const prepare = async (job: NotebookJob) => {
    // The output is not touched until the input has been read and found valid.
    let loaded = await loadNotebook(job.input, job.input);
    if (job.output !== job.input) {
      await copyFile(job.input, job.output);
      loaded = await loadNotebook(job.output, job.output);
    }
    const choice: NotebookKernelChoice = options.kernelName
      ? { name: options.kernelName }
      : await chooseNotebookKernel(
          loaded.notebook,
          () => options.kernels.kernelSpecNames(),
          options.kernels.choice.kernelName,
        );
    const kernel = options.kernels.startKernel({
      kernelName: choice.name,
      cwd: options.cwd ?? dirname(job.input),
      signal: options.signal,
    });
    kernel.catch(() => {}); // awaited below; avoid an unhandled rejection while it waits its turn
    return { loaded, kernel, kernelNotice: choice.notice };
  };

  const ahead = Math.max(0, options.prestart ?? 1);
  const concurrency = Math.max(1, Math.min(Math.floor(options.concurrency ?? 1), jobs.length));
  const prepared = new Map<number, ReturnType<typeof prepare>>();
  /** The next job no worker has taken yet. */
  let next = 0;
  const ensure = (i: number) => {
    if (i >= jobs.length || prepared.has(i) || options.signal?.aborted) return;
    const p = prepare(jobs[i]);
    p.catch(() => {});
    prepared.set(i, p);
  };

  const runOne = async (i: number): Promise<NotebookJobResult> => {
    const job = jobs[i];
    const started = performance.now();
    ensure(i);
    const current = prepared.get(i);
    prepared.delete(i);
    let kernel: Kernel | undefined;
    try {
      if (!current) throw new Error("cancelled");
      const { loaded, kernel: starting, kernelNotice } = await current;
      if (kernelNotice) options.onNotice?.(job, kernelNotice);
      kernel = await starting;
      // Kernels for the jobs no worker has taken yet start while this one runs.
      for (let j = 0; j < ahead; j++) ensure(next + j);
      if (options.signal?.aborted) throw new Error("cancelled");
      // Bounded stream messages and no dropped IOPub output, invisibly (no count, no history). The
      // guard is Python: a kernel of another language gets nothing (docs/kernels.md).
      if (speaksPython(kernel.info))
        await kernel.execute(streamGuardScript(), { silent: true, storeHistory: false, keepText: false });
      const nb = loaded.notebook;
      const indices = nb.cells.map((_, j) => j);
      options.onNotebookStart?.(job, nb.cells.filter((c) => c.cell_type === "code").length);
      const k = kernel;
      const result = await runNotebookCells({
        loaded,
        indices,
        execute: (code, opts) => k.execute(code, { ...opts, keepText: false, stdinDisabled: true }),
        sendAhead: (code, after) => k.sendAhead?.(code, { stdinDisabled: true, after }),
        registry: new DisplayRegistry(),
        allowErrors: options.allowErrors,
        languageInfo: kernel.info.languageInfo,
        recordTiming: options.recordTiming ?? true,
        cellTimeoutMs: options.cellTimeoutMs,
        signal: options.signal,
        onCellStart: (index) => options.onCellStart?.(job, index),
        onCellEnd: (report) => options.onCellEnd?.(job, report),
      });
      return { job, result, seconds: (performance.now() - started) / 1000 };
    } catch (err) {
      return {
        job,
        error: (err as Error).message,
        failure: err,
        seconds: (performance.now() - started) / 1000,
      };
    } finally {
      if (kernel) shutdowns.push(kernel.shutdown().catch(() => {}));
    }
  };

  // `concurrency` workers take the jobs in order; a failing notebook does not stop the others.
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await runOne(i);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  for (const pending of prepared.values()) {
    shutdowns.push(
      pending
        .then((p) => p.kernel)
        .then((k) => k.shutdown())
        .catch(() => {}),
    );
  }
  await Promise.all(shutdowns);
  return results;
}
