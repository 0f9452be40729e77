/**
 * Runs a notebook's cells in that notebook's own kernel session and writes the outputs back:
 * the NotebookExecutor the notebook tool delegates `run` and `execute: true` to. The model gets the
 * same result as from the python tool (bounded text with the full output behind artifact://<id>,
 * images, per-cell status), plus the cells that ran with their ids and execution counts.
 */
import {
  type Cell,
  findCellById,
  loadNotebook,
  NotebookFileError,
  repairDuplicateIds,
} from "../../notebook/index.js";
import { CALL_OUTPUT_BYTES, DEFAULT_IMAGE_BUDGET, type ImageBudget } from "../../output/model-budgets.js";
import { KernelUnreachableError } from "../../runtime/errors.js";
import { MAX_QUEUED_IDS } from "../../runtime/events.js";
import {
  type CellRunReport,
  type NotebookRunResult,
  RAISES_TAG,
  runNotebookCells,
  skipReason,
} from "../../runtime/notebook-run.js";
import { DisplayRegistries, notebookSession } from "../../runtime/notebook-session.js";
import type { Runtime } from "../../runtime/runtime.js";
import type { StateLoss } from "../../runtime/sessions.js";
import { plural } from "../../sys/units.js";
import { CellCall, callDeadline } from "../cell-call.js";
import { describeFailure } from "../failure-text.js";
import { cellList, unreachableKernelText } from "../kernel-text.js";
import { cellRan, emptyDetails, type PythonToolDetails } from "../python/result.js";
import { recordStateLoss } from "../queue-holder.js";
import type { RunRegistry } from "../runs/registry.js";
import { fileErrorText } from "../sandbox-paths.js";
import { errorResult, type ToolResult, type ToolUpdate } from "../types.js";
import { repairedIdsText } from "./problems.js";
import type { NotebookExecutor, NotebookRunRequest } from "./types.js";

/** Indices of the runnable code cells above `index`. */
function codeCellsBefore(nb: { cells: Cell[] }, index: number | undefined): number[] {
  const out: number[] = [];
  if (index === undefined) return out;
  for (let i = 0; i < index; i++) if (!skipReason(nb.cells[i])) out.push(i);
  return out;
}

/** How a cell is known in a kernel's record of the cells run in it: its id, else its index. */
function cellKey(cell: Cell, index: number): string {
  return typeof cell.id === "string" ? `id:${cell.id}` : `index:${index}`;
}

/** The cell above the selection whose run lost the kernel's state last (lease.lastLoss), if any. */
function culpritOf(
  loss: StateLoss | undefined,
  earlier: number[],
  keyOf: (index: number) => string,
): { index: number; loss: StateLoss } | undefined {
  if (!loss?.cellKey) return undefined;
  const index = earlier.find((i) => keyOf(i) === loss.cellKey);
  return index === undefined ? undefined : { index, loss };
}

/**
 * The note for code cells above the selection that have not run in the notebook's kernel, with the
 * calls that run them with the selection: one range, or, when one of them is the cell whose run
 * lost the kernel's state, ranges around it (running it again would do the same; it is named, and
 * why).
 */
function aboveNote(
  earlier: number[],
  o: {
    path: string;
    first: number;
    last: number;
    started: boolean;
    culprit?: { index: number; loss: StateLoss };
  },
): string {
  const one = earlier.length === 1;
  const what = o.started
    ? `this run started the notebook's kernel, and the code ${cellList(earlier)} above the first selected cell did not run in it: what ${one ? "it defines" : "they define"} does not exist yet.`
    : `the code ${cellList(earlier)} above the first selected cell ${one ? "has" : "have"} not run in the notebook's kernel since it started: what ${one ? "it defines" : "they define"} may not exist.`;
  const call = (range?: [number, number]) =>
    JSON.stringify({ action: "run", notebook_path: o.path, ...(range ? { cell_range: range } : {}) });
  const whole = `(or the whole notebook: ${call()})`;
  const c = o.culprit;
  if (!c)
    return `Note: ${what} To run ${one ? "it" : "them"} with the selection: ${call([earlier[0], o.last])} ${whole}.`;
  const why =
    c.loss.cause === "death"
      ? "the kernel died while it ran"
      : "it did not stop when interrupted, so the kernel was restarted";
  const left = `Cell ${c.index} is left out: its last run lost the kernel's state (${why}), and running it again would do the same until it is fixed.`;
  const before = earlier.filter((i) => i < c.index);
  const after = earlier.filter((i) => i > c.index);
  const calls = [
    ...(before.length ? [call([before[0], c.index - 1])] : []),
    call([after[0] ?? o.first, o.last]),
  ];
  const rest = earlier.filter((i) => i !== c.index);
  const todo = rest.length
    ? ` To run ${rest.length === 1 ? "the other one" : "the others"} with the selection: ${calls.join(", then ")}.`
    : "";
  return `Note: ${what} ${left}${todo}`;
}

/** The timeout of a run that gives none where nothing goes on in the background (docs/runs.md). */
export const DEFAULT_RUN_TIMEOUT_SECONDS = 60;

export interface NotebookRunCellDetails {
  index: number;
  /** Its index when it ran (or was skipped), when other edits moved it. */
  indexNow?: number;
  id?: string;
  status: string;
  executionCount: number | null;
  reason?: string;
  /** The error was expected (raises-exception tag). */
  expectedError?: boolean;
}

export interface NotebookRunDetails extends PythonToolDetails {
  notebookPath: string;
  /** Every selected cell: ran (with its outcome), skipped (markdown, empty, skip-execution) or not run. */
  ranCells: NotebookRunCellDetails[];
  /** Ids of the cells whose outputs were rewritten in the file. */
  updatedCellIds: string[];
  saved: boolean;
}

export interface NotebookExecutorOptions {
  runtime: Runtime;
  sessionId?: string;
  maxOutputBytes?: number;
  images?: ImageBudget;
  updateIntervalMs?: number;
  /** Record nbclient-style timing in metadata.execution (default false: smaller diffs). */
  recordTiming?: boolean;
  /** Runs that outlive a call (docs/runs.md); without it a run is awaited however long. */
  runs?: RunRegistry;
}

export function createNotebookExecutor(options: NotebookExecutorOptions): NotebookExecutor & {
  registries: DisplayRegistries;
} {
  const registries = new DisplayRegistries();
  const maxBytes = options.maxOutputBytes ?? CALL_OUTPUT_BYTES;
  const images = { ...DEFAULT_IMAGE_BUDGET, ...options.images };
  const session = options.sessionId ?? options.runtime.defaultSessionId;
  // Where runs go on in the background, one without a timeout has no time limit (docs/runs.md).
  const background = options.runs?.background === true;

  async function run(request: NotebookRunRequest): Promise<ToolResult<NotebookRunDetails>> {
    const params = request.params as NotebookRunRequest["params"] & {
      timeout?: unknown;
      allow_errors?: unknown;
    };
    const allowErrors = params.allow_errors === true;
    // From the call's start: reading the notebook counts against it.
    const deadline = callDeadline(
      typeof params.timeout === "number" && params.timeout > 0 ? params.timeout : undefined,
      background,
      DEFAULT_RUN_TIMEOUT_SECONDS,
    );
    const base: NotebookRunDetails = {
      ...emptyDetails("session", session, "", maxBytes),
      notebookPath: request.shownPath,
      ranCells: [],
      updatedCellIds: [],
      saved: false,
    };
    let loaded: Awaited<ReturnType<typeof loadNotebook>>;
    try {
      loaded = await loadNotebook(request.path, request.shownPath, { roots: request.roots });
    } catch (err) {
      if (err instanceof NotebookFileError) return errorResult(fileErrorText(err, request.shownPath), base);
      throw err;
    }
    const nb = loaded.notebook;
    // Before the cells are named: a run names and finds cells by id (runNotebookCells saves these).
    const repairedIds = repairDuplicateIds(nb);
    let cellIndices = request.cellIndices;
    if (request.cellId !== undefined) {
      const at = findCellById(nb, request.cellId);
      if (at < 0)
        return errorResult(
          `cell id ${JSON.stringify(request.cellId)} is no longer in ${request.shownPath} (another call deleted it before it could run); nothing ran.`,
          base,
        );
      cellIndices = [at];
    }
    const { spec, notice } = await notebookSession(
      loaded.path,
      nb,
      session,
      () => options.runtime.kernelSpecNames(),
      undefined,
      options.runtime.choice.kernelName,
    );
    base.cwd = spec.cwd;
    base.kernelOwner = "notebook";
    if (notice) base.notes = [notice];
    const runnable = cellIndices.filter((i) => nb.cells[i] && !skipReason(nb.cells[i]));
    const position = new Map(runnable.map((cellIndex, k) => [cellIndex, k + 1]));
    // Cells are named by their notebook index (what the model addresses them by).
    base.cells = runnable.map((cellIndex) => ({
      index: cellIndex,
      title: `cell ${cellIndex}${typeof nb.cells[cellIndex].id === "string" ? ` (id ${nb.cells[cellIndex].id})` : ""}`,
      status: "pending",
    }));
    const call = new CellCall({
      runtime: options.runtime,
      runs: options.runs,
      what: `run of ${request.shownPath}`,
      session,
      deadline,
      details: base,
      maxBytes,
      images,
      updateIntervalMs: options.updateIntervalMs ?? 250,
      onUpdate: request.onUpdate as ToolUpdate<NotebookRunDetails> | undefined,
      // the run saves its outputs: reading the cell returns an image the run's limit left out
      imageLeftOut: (cell) =>
        `reading the cell sends it: ${JSON.stringify({ action: "read", notebook_path: request.params.notebook_path, cell_index: cell })}`,
    });
    const { recorder, tag } = call;
    const n = runnable.length;
    if (n === 0) {
      base.ranCells = cellIndices.map((i) => ({
        index: i,
        id: nb.cells[i]?.id as string | undefined,
        status: "skipped",
        executionCount: null,
        reason: nb.cells[i] ? skipReason(nb.cells[i]) : "no such cell",
      }));
      return {
        content: [
          {
            type: "text",
            text: `No code cells to run in ${request.shownPath} (the selection holds only markdown, raw, empty or skip-execution cells).`,
          },
        ],
        details: base,
      };
    }
    // The page marks the planned cells waiting ([ ]) until each starts; the plan ends with the run.
    const planned = runnable
      .map((i) => nb.cells[i].id)
      .filter((id): id is string => typeof id === "string" && id !== "")
      .slice(0, MAX_QUEUED_IDS);
    const tellPlan = (cellIds: string[]) =>
      planned.length > 0 && options.runtime.events.emit({ type: "cells-queued", path: loaded.path, cellIds });
    const work = async (runSignal: AbortSignal): Promise<ToolResult<NotebookRunDetails>> => {
      let outcome: NotebookRunResult | undefined;
      tellPlan(planned);
      const failure = await call
        .inSession(
          spec,
          { mode: "session", signal: runSignal },
          async (lease) => {
            // The code cells above the selection that have not run in this kernel since it started
            // (whoever started it); unknown for a re-attached named kernel, which says nothing.
            const cellsRun = lease.cellsRun();
            const earlier = cellsRun
              ? codeCellsBefore(nb, runnable[0]).filter((i) => !cellsRun.has(cellKey(nb.cells[i], i)))
              : [];
            if (earlier.length > 0) {
              base.notes = [
                ...(base.notes ?? []),
                aboveNote(earlier, {
                  path: request.shownPath,
                  last: cellIndices[cellIndices.length - 1],
                  first: cellIndices[0],
                  started: lease.kernelStarted,
                  culprit: culpritOf(lease.lastLoss, earlier, (i) => cellKey(nb.cells[i], i)),
                }),
              ];
            }
            const result = await runNotebookCells({
              loaded,
              indices: cellIndices,
              execute: (code, opts) => lease.execute(code, opts),
              sendAhead: (code, after) => lease.kernel().sendAhead?.(code, { after }),
              onSaved: (path, cellIds) =>
                options.runtime.events.emit({ type: "notebook-saved", path, cellIds }),
              registry: registries.get(loaded.path),
              repaired: repairedIds,
              widgets: lease.widgets(),
              allowErrors,
              languageInfo: lease.kernel().info.languageInfo,
              recordTiming: options.recordTiming === true,
              deadline,
              signal: runSignal,
              executeHooks: (cellIndex) => recorder.hooks(position.get(cellIndex) ?? 0),
              onCellStart: (cellIndex, cell, indexNow) => {
                const current = position.get(cellIndex) ?? 0;
                const entry = base.cells[current - 1];
                if (entry && indexNow !== cellIndex) {
                  // Moved by other edits: the text names it by where it is now (the merge lines say
                  // "now at index N" once; every other mention uses N).
                  entry.index = indexNow;
                  entry.title = `cell ${indexNow}${typeof cell.id === "string" ? ` (id ${cell.id})` : ""}`;
                }
                call.startCell(current, `[${entry?.title}]`); // notebook indices only: one numbering scheme
              },
              onCellEnd: (report) => {
                // Ran in the current kernel, unless it died or was restarted under the cell (state gone).
                const r = report.result;
                if (r && !r.kernelDied && !r.kernelRestarted)
                  lease.cellsRun()?.add(cellKey(nb.cells[report.index], report.index));
                if (report.result) {
                  const k = position.get(report.index) ?? 0;
                  const tags = (nb.cells[report.index].metadata as { tags?: unknown }).tags;
                  const raises = Array.isArray(tags) && tags.includes(RAISES_TAG);
                  recorder.finishCell(k, report.result, deadline, allowErrors || raises, runSignal);
                  if (typeof report.id === "string") base.updatedCellIds.push(report.id);
                }
                base.ranCells.push({
                  index: report.index,
                  ...(report.indexNow !== undefined && { indexNow: report.indexNow }),
                  id: report.id,
                  status: report.status,
                  executionCount: report.executionCount,
                  reason: report.reason,
                  expectedError: report.expectedError,
                });
              },
            });
            base.saved = !result.saveError;
            outcome = result;
            recordStateLoss(lease, tag, request.signal, runSignal, (i) =>
              nb.cells[i] ? cellKey(nb.cells[i], i) : undefined,
            );
          },
          // A file error (the notebook went away or became unreadable mid-run) is said as one.
          (err) => err instanceof NotebookFileError,
        )
        .finally(() => tellPlan([]));
      // Cells that did not start are named where they are in the file as the run last read it (other
      // edits may have moved them), as the cells that ran are: one numbering in the whole text.
      const indexNow = (planned: number): number => {
        const id = nb.cells[planned]?.id;
        const at = typeof id === "string" && id ? findCellById(loaded.notebook, id) : -1;
        return at >= 0 ? at : planned;
      };
      for (const c of base.cells) if (c.status === "pending") c.index = indexNow(c.index);
      const result = (await recorder.result()) as ToolResult<NotebookRunDetails>;
      if (failure !== undefined) {
        const msg =
          failure instanceof NotebookFileError
            ? fileErrorText(failure, request.shownPath)
            : failure instanceof KernelUnreachableError
              ? unreachableKernelText(failure, "notebook", describeFailure(failure.error))
              : describeFailure(failure);
        const prefix =
          failure instanceof NotebookFileError || failure instanceof KernelUnreachableError
            ? ""
            : "could not start the notebook's kernel: ";
        return errorResult(`${prefix}${msg}`, result.details);
      }
      return wordRun(result, outcome, {
        path: request.shownPath,
        selected: n,
        last: indexNow(cellIndices[cellIndices.length - 1]),
      });
    };
    const wait = (request.params as { wait?: number }).wait;
    return call.start(work, { wait, signal: request.signal, onUpdate: request.onUpdate });
  }

  const { idleTimeoutMs, maxSessions } = options.runtime.sessions;
  return {
    run: run as NotebookExecutor["run"],
    registries,
    limits: { idleTimeoutMs, maxSessions },
    background,
    maxOutputBytes: maxBytes,
  };
}

/** The skipped cells named with why, grouped: `cell 0 (tagged skip-execution), cells 2 and 4 (markdown cell)`. */
function skippedText(cells: NotebookRunCellDetails[]): string {
  const byReason = new Map<string, number[]>();
  const moved: string[] = [];
  for (const c of cells) {
    if (c.status !== "skipped") continue;
    const why = c.reason ?? "skipped";
    if (c.indexNow !== undefined) moved.push(`cell ${c.index}, now at index ${c.indexNow} (${why})`);
    else byReason.set(why, [...(byReason.get(why) ?? []), c.index]);
  }
  return [...[...byReason].map(([why, indices]) => `${cellList(indices)} (${why})`), ...moved].join(", ");
}

/** What the model is told when other writers changed the file during the run (docs/notebook-tool.md). */
function mergeLines(reports: CellRunReport[], merges: number): string[] {
  const at = (c: CellRunReport) =>
    `Cell ${c.index}${c.id ? ` (id ${c.id})` : ""}${c.indexNow !== undefined ? `, now at index ${c.indexNow},` : ""}`;
  const lines: string[] = [];
  if (merges > 0)
    lines.push(
      "The file changed on disk during the run (another call or program saved it): the run's outputs were merged into it by cell id, and the other changes are kept. Read it again before editing by index.",
    );
  for (const c of reports) {
    if (c.status === "deleted") lines.push(`${at(c)} did not run: ${c.reason}.`);
    if (c.editedBeforeRun) lines.push(`${at(c)} was edited after the run started: its new source ran.`);
    if (c.editedWhileRunning)
      lines.push(
        `${at(c)} was edited while it ran: the outputs saved with it are those of the code that ran (above).`,
      );
    if (c.notSaved === "deleted")
      lines.push(
        `${at(c)} was deleted from the notebook while it ran: its outputs are not in the file; they are in this result (above).`,
      );
    if (c.notSaved === "no-ids")
      lines.push(
        `${at(c)}'s outputs are not in the file: its cells have no ids and the file's cell count changed, so it could not be found again; they are in this result (above).`,
      );
  }
  return lines;
}

/**
 * A finished run's text (docs/notebook-tool.md, "run"): how many of the selected cells ran and
 * whether their outputs are saved, what merged with other edits, repaired ids, cells the run did not
 * reach, and the call that goes on from a failure — above the cells' own output. `last` is the
 * selection's last cell where it is in the file now.
 */
function wordRun(
  result: ToolResult<NotebookRunDetails>,
  outcome: NotebookRunResult | undefined,
  { path, selected, last }: { path: string; selected: number; last: number },
): ToolResult<NotebookRunDetails> {
  const base = result.details;
  // A failure is a cell that did not finish or whose error was not allowed (allow_errors, or a
  // raises-exception tag: nbclient does not count those either).
  const failed = base.cells.find((c) => c.status === "aborted" || (c.status === "error" && !c.allowedError));
  // A run whose file could not be saved any more stopped there: an error, whatever the cells did.
  result.isError = failed || outcome?.saveError ? true : undefined;
  const ran = base.cells.filter(cellRan);
  const unrun = base.cells.filter((c) => !cellRan(c)).map((c) => c.index);
  const skipped = skippedText(base.ranCells);
  const reports = outcome?.cells ?? [];
  const unsaved = reports.filter((c) => c.notSaved !== undefined && c.result !== undefined);
  const savedText =
    ran.length === 0
      ? ""
      : outcome?.saveError
        ? `The outputs of the cells that ran since the last save are NOT in the file: ${fileErrorText(outcome.saveError, path).replace(/ Nothing was (read or )?written[;.].*$/, "")}. They are shown below.`
        : unsaved.length === 0
          ? "Outputs of the cells that ran are saved in the notebook."
          : "Outputs of the other cells that ran are saved in the notebook.";
  const lines = [
    `Ran ${ran.length} of ${plural(selected, "code cell")} selected in ${path} (0-based cell indices)${
      skipped ? `; skipped: ${skipped}` : ""
    }. ${savedText}`.trimEnd(),
    ...mergeLines(reports, outcome?.merges ?? 0),
  ];
  const repaired = repairedIdsText(outcome?.repairedIds ?? []);
  if (repaired) lines.push(`${repaired[0].toUpperCase()}${repaired.slice(1)}.`);
  const notRun = reports.filter((c) => c.status === "not-run").map((c) => c.index);
  if (outcome?.saveError && notRun.length > 0)
    lines.push(
      `${cellList(notRun).replace(/^c/, "C")} did not run: the run stopped because the notebook could not be saved.`,
    );
  const first = result.content[0];
  if (failed && (unrun.length > 0 || failed.status === "aborted")) {
    const stateLost =
      failed.restartedAfterInterrupt || failed.kernelEvents?.some((e) => e.kind === "died-during-code");
    const from = unrun.length > 0 && !cellRan(failed) ? unrun[0] : failed.index;
    const resume = JSON.stringify(
      stateLost
        ? { action: "run", notebook_path: path }
        : { action: "run", notebook_path: path, cell_range: [from, last] },
    );
    const when = stateLost
      ? `The kernel's state is gone, so cells above cell ${failed.index} must run again too. To run the notebook from the top once cell ${failed.index} is fixed`
      : failed.status === "error"
        ? `To run from cell ${from} on once it is fixed`
        : failed.abort?.kind === "timeout"
          ? `To run from cell ${from} on (with a larger timeout if it needs one)`
          : `To run from cell ${from} on`;
    if (first?.type === "text") first.text += `\n${when}: ${resume}`;
  }
  if (first?.type === "text") first.text = `${lines.join("\n")}\n${first.text}`;
  return result;
}
