/**
 * Runs a notebook's cells in a kernel and writes the outputs back into the file, the way nbclient
 * does: code cells only, whitespace-only cells and `skip-execution` cells left as they are, outputs
 * replaced per executed cell, stop at the first error unless errors are allowed (globally or by the
 * cell's `raises-exception` tag). The file is saved atomically as cells complete — at most once a
 * second (a save costs an fsync and a rename: once per cell, it was most of a run of quick cells),
 * and always at the end, on an error, a save failure's stop and as soon as the run is aborted — so a
 * crash mid-run keeps what ran, a SIGKILL losing at most the cells that completed in the last second
 * (docs/runs.md, "Saves during a run"). A save while a cell runs writes that cell as it was before
 * its run: the file only ever holds completed cells' outputs. The file may change underneath (the
 * agent's own edits, a person's editor):
 * each cell is found by id when its turn comes and runs with its current source, and each save
 * merges the run's outputs into the file as it is then (docs/notebook-tool.md, "A run merges with
 * other edits").
 */
import type { ExecuteOptions, ExecuteResult, ReplySeen, SentAhead } from "../kernel/types.js";
import {
  type CarriedCell,
  type Cell,
  carryInto,
  cellSource,
  changedOnDisk,
  type Fingerprint,
  fileTurnKey,
  findCellById,
  inFileTurn,
  type JsonValue,
  type LoadedNotebook,
  loadNotebook,
  type Notebook,
  NotebookFileError,
  type RepairedCellId,
  repairDuplicateIds,
  saveNotebook,
  splitOutputLines,
  thawCell,
  unchangedNow,
} from "../notebook/index.js";
import { CellOutputCollector, type DisplayRegistry, type NbOutput } from "./collector.js";
import type { Deadline } from "./deadline.js";
import { recordWidgetState, WidgetStates } from "./widget-state.js";

/** deleted: the cell was no longer in the file when its turn came (docs/notebook-tool.md). */
export type CellRunStatus = "ok" | "error" | "skipped" | "aborted" | "not-run" | "deleted";

export interface CellRunReport {
  /** The cell's index as selected (in the file as the run loaded it). */
  index: number;
  /** Its index in the file when it ran, when other edits moved it. */
  indexNow?: number;
  id?: string;
  status: CellRunStatus;
  /** Why a cell was skipped or not run. */
  reason?: string;
  /** An error the cell's raises-exception tag says to expect (nbclient does not count it as a failure). */
  expectedError?: boolean;
  executionCount: number | null;
  result?: ExecuteResult;
  durationMs: number;
  /** Its source was changed in the file after the run started and before its turn: the new one ran. */
  editedBeforeRun?: boolean;
  /** Its source was changed in the file while it ran: the outputs saved with it are the old code's. */
  editedWhileRunning?: boolean;
  /**
   * Its outputs are not in the file: the cell was deleted while it ran (or after), the cells have no
   * ids and the file's cell count changed, or the file could not be saved (`saveError`).
   */
  notSaved?: "deleted" | "no-ids" | "save-failed";
}

export interface NotebookRunOptions {
  loaded: LoadedNotebook;
  /** Indices of the cells to run, in order. */
  indices: number[];
  /** Runs one cell's code: a kernel's execute, or a session lease's (with its restart rules). */
  execute: (code: string, options: ExecuteOptions & { cellId?: string }) => Promise<ExecuteResult>;
  /**
   * Sends a later cell's request at once (the kernel's `sendAhead`): at the reply of the cell before
   * it, and, where the kernel has nbagent's guard, the one after that too, to run only `after` it
   * (docs/runs.md, "Pipelined cells"). Absent, or undefined returned: each cell is sent when the
   * one before it has ended.
   */
  sendAhead?: (code: string, after?: SentAhead) => SentAhead | undefined;
  /** Told after each save: the file and the cells whose outputs this run wrote (docs/view.md). */
  onSaved?: (path: string, cellIds: string[]) => void;
  /** Shared ids the caller already made unique in `loaded` (saved and reported with the run's own). */
  repaired?: RepairedCellId[];
  /** display_id map that lives as long as the notebook's kernel session. */
  registry: DisplayRegistry;
  /**
   * The kernel's widgets (as long as the kernel lives: widgets made by earlier runs stay); their
   * state is saved in metadata.widgets as nbclient saves it. Default: this run's widgets only.
   */
  widgets?: WidgetStates;
  allowErrors?: boolean;
  /** Record nbclient-style timing in metadata.execution. */
  recordTiming?: boolean;
  /**
   * Save as cells complete (default true), at most once per `saveIntervalMs`, and at the end, on a
   * stop and on abort; false saves once at the end.
   */
  saveEachCell?: boolean;
  /** Least time between two saves while cells complete (default SAVE_INTERVAL_MS; 0: after every cell). */
  saveIntervalMs?: number;
  /**
   * The kernel's language_info, recorded in the notebook's metadata as nbclient does (a change is
   * saved even when no cell runs).
   */
  languageInfo?: Record<string, unknown>;
  /** Bound for each cell (ms); the overall deadline is the caller's signal. */
  cellTimeoutMs?: number;
  /** The whole run's deadline (the call's): each cell gets what is left of it. */
  deadline?: Deadline;
  signal?: AbortSignal;
  /**
   * Hooks per cell, for model-facing output (the tool) or progress (the CLI); `index` as selected,
   * `indexNow` where the cell is in the file as it runs (other edits may have moved it).
   */
  onCellStart?: (index: number, cell: Cell, indexNow: number) => void;
  onCellEnd?: (report: CellRunReport) => void;
  executeHooks?: (
    index: number,
  ) => Pick<
    ExecuteOptions,
    "onChunk" | "onDisplay" | "onStatusEvent" | "onNotice" | "onClearOutput" | "keepText"
  >;
}

export interface NotebookRunResult {
  cells: CellRunReport[];
  /** The run stopped early (error, abort, kernel death, a save that failed). */
  stopped: boolean;
  stopReason?: string;
  /**
   * Times the file was found changed on disk by another writer and the run's outputs were merged
   * into the newer version (by cell id) instead of overwriting it. The file as a run of this process
   * last saved it is not another writer's (lastRunSave).
   */
  merges: number;
  /** A save failed for good (the file deleted, made invalid or unwritable): what failed. */
  saveError?: NotebookFileError;
  /** How many times the file was saved (written and renamed into place). */
  saves: number;
  /** Cells that shared an id with a cell above them and were given fresh ids before the run. */
  repairedIds: RepairedCellId[];
}

/** The kernel answered the request `aborted` on its own: no interrupt, time limit or death of ours. */
function droppedUnrun(result: ExecuteResult): boolean {
  return (
    result.status === "aborted" &&
    !result.cancelled &&
    !result.timedOut &&
    !result.kernelDied &&
    !result.kernelRestarted &&
    result.executionCount === null
  );
}

/** The cell ran (whatever its outcome): it has a result. */
export function cellRanInRun(report: CellRunReport): boolean {
  return report.result !== undefined;
}

export const SKIP_TAG = "skip-execution";
export const RAISES_TAG = "raises-exception";

function tags(cell: Cell): string[] {
  const t = (cell.metadata as { tags?: unknown }).tags;
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : [];
}

/** Why nbclient would not execute this cell, or undefined when it runs. */
export function skipReason(cell: Cell): string | undefined {
  if (cell.cell_type !== "code") return `${cell.cell_type} cell`;
  if (cellSource(cell).trim() === "") return "empty cell";
  if (tags(cell).includes(SKIP_TAG)) return `tagged ${SKIP_TAG}`;
  return undefined;
}

/** Sets the notebook's metadata.language_info; returns whether it changed. */
function recordLanguageInfo(nb: Notebook, languageInfo: Record<string, unknown> | undefined): boolean {
  const metadata = (nb.metadata ?? {}) as Record<string, unknown>;
  if (!languageInfo || JSON.stringify(metadata.language_info) === JSON.stringify(languageInfo)) return false;
  nb.metadata = { ...metadata, language_info: languageInfo } as Notebook["metadata"];
  return true;
}

/** The key a cell's displays are registered under: its id, else its position in this run. */
export function cellKey(cell: Cell, index: number): string {
  return typeof cell.id === "string" && cell.id ? `id:${cell.id}` : `index:${index}`;
}

/**
 * Per notebook (real path), the file as the last save of a run in this process left it (its stat):
 * a run that finds exactly that on disk finds its own kind's save — outputs written by a run, which
 * may still have been saving while this one waited for the kernel — not another writer's change.
 */
const lastRunSave = new Map<string, string>();

function statKey(fp: Fingerprint): string {
  return `${fp.dev}:${fp.ino}:${fp.size}:${fp.mtimeNs}:${fp.ctimeNs}`;
}

/** Tries at a save that finds the file changed again each time before giving up. */
const SAVE_TRIES = 5;

/** Least time between two saves of a run while cells complete (docs/runs.md, "Saves during a run"). */
export const SAVE_INTERVAL_MS = 1000;

/**
 * Runs the selected cells (module comment): each planned cell is found again in the file as it is
 * now, run with its current source, and its outputs saved with the others' (NotebookRun).
 */
export async function runNotebookCells(options: NotebookRunOptions): Promise<NotebookRunResult> {
  const run = new NotebookRun(options);
  try {
    await run.saveRepairedIds();
    for (let k = 0; k < run.plan.length; k++) {
      const planned = run.plan[k];
      // Sent ahead and not dropped by the kernel: it runs (or ran) in the kernel, stopped run or not.
      const ahead = run.takeAhead(k);
      if (run.stopped && !ahead) {
        run.notRun(planned, "not-run", run.stopReason);
        continue;
      }
      const index = ahead ? run.relocate(ahead) : await run.find(planned, k);
      if (index === undefined) continue;
      await run.runCell(planned, index, k, ahead);
    }
  } finally {
    run.close();
  }
  return run.finish();
}

/** A cell the run was asked for, as it was when the run loaded the file. */
interface PlannedCell {
  index: number;
  id?: string;
  source: string;
}

/** Where a planned cell is in the file now, or why it does not run. */
type Located = { index: number } | { status: CellRunStatus; reason: string; now?: number };

/** A later cell to run, found at the reply of a cell before it, its request sent then. */
interface Ahead {
  /** Its place in the plan. */
  position: number;
  /** Its index in the file then, the cell as it was and the code sent. */
  index: number;
  cell: Cell;
  code: string;
  sent: SentAhead;
  /**
   * Sent to run only after the request before it (the kernel's guard): "run" once that one's reply
   * said the kernel runs it, "abort" once it said the kernel drops it; undefined: not known yet.
   * Absent: the kernel runs it whatever came before.
   */
  guard?: { fate?: "run" | "abort" };
  /** The planned cells between the one before it and this one, found then not to run. */
  passed: number[];
}

/** A cell whose outputs this run wrote (ran, or had a display updated), with its report. */
type CarriedEntry = CarriedCell & { report?: CellRunReport };

/**
 * One run's state and its steps: the plan, the reports, the cells whose outputs it carries, and its
 * saves — timed (at most one per interval while cells complete), merged into the file as another
 * writer left it, taking turns with the reads that find each cell again.
 */
class NotebookRun {
  readonly plan: PlannedCell[];
  readonly reports: CellRunReport[] = [];
  stopped = false;
  stopReason: string | undefined;
  private readonly loaded: LoadedNotebook;
  private readonly widgets: WidgetStates;
  private readonly repairedIds: RepairedCellId[];
  private readonly carried: CarriedEntry[] = [];
  private readonly saveEach: boolean;
  private readonly interval: number;
  private readonly plannedCount: number;
  private cellCount: number;
  private merges = 0;
  private saves = 0;
  private saveError: NotebookFileError | undefined;
  /** Saves and refreshes take turns (a timed save may come while the loop looks at the file). */
  private turns: Promise<unknown> = Promise.resolve();
  /** The cell running now: its entry and the cell as it was before its run. */
  private running: { entry: CarriedEntry; before: Cell } | undefined;
  private lastSave = performance.now();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Completed cells' outputs not saved yet (a save came too soon after the last one). */
  private pending = false;
  /** A timed save that failed: the loop stops with it when the running cell ends. */
  private timedError: unknown;
  /** Something to save that no timed save took (language_info, the last cell). */
  private dirty: boolean;
  private readonly onAbort = () => this.saveSoon(true);
  /**
   * The later cells' requests in the kernel, in plan order (docs/runs.md, "Pipelined cells"): the
   * next one sent at the reply of the cell before it, and one guarded behind it.
   */
  private aheads: Ahead[] = [];
  /** What was found at those replies for the planned cells between them (skipped, deleted). */
  private readonly decided = new Map<number, Located>();

  constructor(private readonly options: NotebookRunOptions) {
    const { loaded } = options;
    this.loaded = loaded;
    this.widgets = options.widgets ?? new WidgetStates();
    // A run finds each cell by id when its turn comes: ids shared by two cells are made unique first,
    // as nbformat does on read, and saved before any cell runs (so a merge finds them again).
    this.repairedIds = [...(options.repaired ?? []), ...repairDuplicateIds(loaded.notebook)];
    this.saveEach = options.saveEachCell !== false;
    this.interval = options.saveIntervalMs ?? SAVE_INTERVAL_MS;
    // The planned cells, by id when they have one: their positions may move under other edits.
    this.plan = options.indices.map((index) => {
      const cell = loaded.notebook.cells[index];
      const id = typeof cell?.id === "string" && cell.id ? cell.id : undefined;
      return { index, id, source: cell ? cellSource(cell) : "" };
    });
    this.plannedCount = loaded.notebook.cells.length;
    this.cellCount = this.plannedCount;
    options.signal?.addEventListener("abort", this.onAbort, { once: true });
    this.dirty = recordLanguageInfo(loaded.notebook, options.languageInfo);
  }

  /**
   * The request sent ahead for the planned cell at `position`, if any (taken once). A guarded one
   * the kernel was not told to run (the cell before it failed, took long, or never replied) is let
   * go: the cell's turn comes as without it.
   */
  takeAhead(position: number): Ahead | undefined {
    const ahead = this.aheads[0];
    if (ahead?.position !== position) return undefined;
    this.aheads.shift();
    if (ahead.guard && ahead.guard.fate !== "run") {
      this.drop(ahead);
      return undefined;
    }
    return ahead;
  }

  /** A guarded request the kernel drops unrun: let go, with what was found for the cells before it. */
  private drop(ahead: Ahead): void {
    ahead.sent.release();
    for (const p of ahead.passed) this.decided.delete(p);
    this.aheads = this.aheads.filter((a) => a !== ahead);
  }

  /** Where the cell sent ahead is now (a save's merge may have moved it); -1: deleted since. */
  relocate(ahead: Ahead): number {
    const nb = this.loaded.notebook;
    const id = this.plan[ahead.position].id;
    if (id !== undefined) return findCellById(nb, id);
    return nb.cells.length === this.plannedCount ? this.plan[ahead.position].index : -1;
  }

  /** Requests sent ahead and never taken over are let go. */
  close(): void {
    for (const a of this.aheads) a.sent.release();
    this.aheads = [];
  }

  /**
   * The reply of the cell at plan position `k` came. A guarded request behind it learns its fate
   * (the reply says whether the kernel runs it). Then, if the run goes on, the next cell to run is
   * found in the file as the run holds it (no change seen since it was read) and its request sent
   * now, before this cell's idle and its bookkeeping — and, where the kernel has the guard, the
   * cell after that one too, to run only after it. True when a request runs behind this cell.
   */
  private replied(k: number, reply: ReplySeen): boolean {
    const behind = this.aheads[0];
    if (behind?.guard && behind.guard.fate === undefined) {
      behind.guard.fate = reply.next === "run" ? "run" : "abort";
      if (behind.guard.fate === "abort") this.drop(behind);
    }
    const queued = this.aheads.length > 0;
    const send = this.options.sendAhead;
    if (!send || reply.interrupted || reply.status === "aborted") return queued;
    // Not after an error, even an allowed one: a kernel other than IPython (IRkernel) may drop a
    // request that arrives while it ends an error, and the run would wait for it for ever.
    if (reply.status !== "ok") return queued;
    if (this.stopped || this.options.signal?.aborted || this.timedError || this.saveError) return queued;
    // The file may have changed (one synchronous stat): the next cell is found after reading it
    // again, at its turn, as without pipelining.
    if (!unchangedNow(this.loaded)) return queued;
    if (this.aheads.length === 0 && !this.sendAfter(k, send, false)) return false;
    if (reply.next !== undefined && this.aheads.length === 1)
      this.sendAfter(this.aheads[0].position, send, true);
    return true;
  }

  /**
   * Finds the first planned cell after position `k` that runs and sends its request (`guarded`:
   * to run only after the last one sent); the cells passed on the way are decided now. True when
   * one was sent.
   */
  private sendAfter(
    k: number,
    send: NonNullable<NotebookRunOptions["sendAhead"]>,
    guarded: boolean,
  ): boolean {
    const decided: [number, Located][] = [];
    for (let j = k + 1; j < this.plan.length; j++) {
      const located = this.locate(this.plan[j]);
      if (!("index" in located)) {
        decided.push([j, located]);
        continue;
      }
      const cell = this.loaded.notebook.cells[located.index];
      const code = cellSource(cell);
      const sent = send(code, guarded ? this.aheads.at(-1)?.sent : undefined);
      if (!sent) return false;
      for (const [p, l] of decided) this.decided.set(p, l);
      this.aheads.push({
        position: j,
        index: located.index,
        cell,
        code,
        sent,
        ...(guarded && { guard: {} }),
        passed: decided.map(([p]) => p),
      });
      return true;
    }
    return false;
  }

  /** Ids made unique before the run are saved before any cell runs. */
  async saveRepairedIds(): Promise<void> {
    if (this.repairedIds.length === 0) return;
    try {
      await this.serial(() => this.save());
      this.dirty = false;
    } catch (err) {
      this.stopOnSaveError(err);
    }
  }

  /** A selected cell that does not run: its report says why (the model is told which did not run). */
  notRun(planned: PlannedCell, status: CellRunStatus, reason: string | undefined, now?: number): void {
    const report: CellRunReport = {
      index: planned.index,
      ...(now !== undefined && now !== planned.index && { indexNow: now }),
      ...(planned.id !== undefined && { id: planned.id }),
      status,
      reason,
      executionCount: null,
      durationMs: 0,
    };
    this.reports.push(report);
    this.options.onCellEnd?.(report);
  }

  /**
   * The planned cell's index in the file as it is now (another writer may have changed it: it is
   * read again first), or undefined when it does not run — deleted, not findable without ids,
   * skipped, or the file could not be read — with its report made.
   */
  async find(planned: PlannedCell, position: number): Promise<number | undefined> {
    const known = this.decided.get(position);
    if (known) {
      this.decided.delete(position);
      if (!("index" in known)) this.notRun(planned, known.status, known.reason, known.now);
      return undefined;
    }
    try {
      await this.serial(async () => {
        if (this.timedError) throw this.timedError;
        if (await changedOnDisk(this.loaded)) await this.refresh();
      });
    } catch (err) {
      this.stopOnSaveError(err);
      this.notRun(planned, "not-run", this.stopReason);
      return undefined;
    }
    const located = this.locate(planned);
    if ("index" in located) return located.index;
    this.notRun(planned, located.status, located.reason, located.now);
    return undefined;
  }

  /** Where the planned cell is in the file as the run holds it, or why it does not run. */
  private locate(planned: PlannedCell): Located {
    const nb = this.loaded.notebook;
    const index =
      planned.id !== undefined
        ? findCellById(nb, planned.id)
        : nb.cells.length === this.plannedCount
          ? planned.index
          : -1;
    if (index < 0)
      return {
        status: "deleted",
        reason:
          planned.id !== undefined
            ? "deleted from the notebook before its turn"
            : "the notebook changed on disk and its cells have no ids, so this cell could not be found again",
      };
    const skip = skipReason(nb.cells[index]);
    if (skip) return { status: "skipped", reason: skip, now: index };
    return { index };
  }

  /**
   * Runs the cell at `index` (found for `planned`, at plan position `position`), records its outputs
   * and report, saves or schedules a save. `ahead`: its request was sent at the reply of the cell
   * before, with its source then (`index` -1: the cell was deleted from the file since).
   */
  async runCell(planned: PlannedCell, index: number, position: number, ahead?: Ahead): Promise<void> {
    const { options } = this;
    const nb = this.loaded.notebook;
    const detached = index < 0;
    let cell = detached ? ahead!.cell : nb.cells[index];
    // What a save while it runs writes for it (the run below changes the thawed cell in place).
    const before = Object.isFrozen(cell)
      ? cell
      : ({ ...cell, metadata: { ...(cell.metadata as Record<string, unknown>) } } as Cell);
    // A cell deleted after its request went: it runs on a copy that no save writes.
    cell = detached
      ? ({ ...cell, metadata: { ...(cell.metadata as Record<string, unknown>) } } as Cell)
      : thawCell(nb, index);
    const indexNow = detached ? ahead!.index : index;
    options.onCellStart?.(planned.index, cell, indexNow);
    const started = performance.now();
    const key = cellKey(cell, index);
    options.registry.clearCell(key);
    const outputs: NbOutput[] = [];
    cell.outputs = outputs as unknown as JsonValue;
    cell.execution_count = null;
    const code = ahead ? ahead.code : cellSource(cell);
    const report: CellRunReport = {
      index: planned.index,
      ...(indexNow !== planned.index && { indexNow }),
      ...(planned.id !== undefined && { id: planned.id }),
      status: "ok",
      executionCount: null,
      durationMs: 0,
      ...(code !== planned.source && { editedBeforeRun: true }),
      // Changed in the file after its request was sent: the code that runs is the one sent.
      ...(ahead && cellSource(cell) !== code && { editedWhileRunning: true }),
      ...(detached && { notSaved: "deleted" as const }),
    };
    const entry: CarriedEntry = detached
      ? { id: planned.id, index: -1, source: code, cell, report }
      : this.carry(cell, index, code, report);
    entry.report = report;
    entry.source = code;
    this.running = { entry, before };
    if (options.recordTiming) (cell.metadata as Record<string, unknown>).execution = {};
    const collector = new CellOutputCollector({
      cellKey: key,
      outputs,
      registry: options.registry,
      outputsOf: (k) => this.outputsOf(k),
      timingMetadata: options.recordTiming ? (cell.metadata as Record<string, unknown>) : undefined,
      widgets: this.widgets,
    });
    const remaining =
      options.deadline === undefined ? undefined : Math.max(1, options.deadline.remainingMs());
    const timeoutMs = minDefined(options.cellTimeoutMs, remaining);
    const execute = (sent: SentAhead | undefined) =>
      options
        .execute(code, {
          ...options.executeHooks?.(planned.index),
          ...(planned.id !== undefined && { cellId: planned.id }),
          signal: options.signal,
          timeoutMs,
          onIOPub: (msg) => collector.handle(msg),
          ...(sent && { ahead: sent }),
          ...(options.sendAhead && { onReply: (reply) => this.replied(position, reply) }),
        })
        .catch(async (err: unknown) => {
          // The run ends here: what completed goes into the file (this cell as it was), as before.
          options.signal?.removeEventListener("abort", this.onAbort);
          await this.saveCompleted().catch(() => {});
          throw err;
        });
    let result = await execute(ahead?.sent);
    // A guarded request the kernel answered `aborted` though the reply before it said it would run
    // (another client's request reached a shared kernel in between): it did not run; it goes now.
    if (ahead?.guard && droppedUnrun(result)) result = await execute(undefined);
    // A timed save may be under way (and may have merged the cell into a newer file): wait for it.
    await this.serial(async () => {
      this.running = undefined;
    });
    cell = entry.cell;
    // Timed only when a reply came: none does when the kernel went idle without one, died or was restarted.
    collector.replied(result.replyDate, result.executionCount);
    cell.execution_count = collector.executionCount;
    this.dirty = true;
    this.judge(planned, cell, report, result, started);
    // Sent ahead before a save failed for good: it ran, and nothing more is saved.
    if (this.saveError) report.notSaved ??= "save-failed";
    else await this.afterCell();
    this.reports.push(report);
    options.onCellEnd?.(report);
  }

  /** The cell's status from its result, and whether the run stops (an error not allowed, an abort). */
  private judge(
    planned: PlannedCell,
    cell: Cell,
    report: CellRunReport,
    result: ExecuteResult,
    started: number,
  ): void {
    const allowsErrors = this.options.allowErrors === true || tags(cell).includes(RAISES_TAG);
    let status: CellRunStatus =
      result.status === "ok" ? "ok" : result.cancelled || result.timedOut ? "aborted" : "error";
    if (result.kernelDied) status = "aborted";
    report.status = status;
    if (status === "error" && tags(cell).includes(RAISES_TAG)) report.expectedError = true;
    report.executionCount = cell.execution_count as number | null;
    report.result = result;
    report.durationMs = performance.now() - started;
    // A cell sent ahead may end after the run stopped (a save failed): the first reason stays.
    if (this.stopped) return;
    if (status === "aborted") {
      this.stopped = true;
      this.stopReason = result.kernelDied ? "the kernel died" : result.timedOut ? "timed out" : "cancelled";
    } else if (status === "error" && !allowsErrors) {
      this.stopped = true;
      this.stopReason = `cell ${planned.index} failed`;
    }
  }

  /** After a cell: saves now (a stop, an abort, the interval over) or soon; a failed timed save stops the run. */
  private async afterCell(): Promise<void> {
    if (this.timedError) {
      this.stopOnSaveError(this.timedError);
      return;
    }
    if (!this.saveEach && !this.stopped) return;
    this.pending = true;
    if (this.stopped || this.options.signal?.aborted || performance.now() - this.lastSave >= this.interval) {
      try {
        await this.saveCompleted();
        this.dirty = false;
      } catch (err) {
        this.stopOnSaveError(err);
      }
    } else {
      this.saveSoon();
    }
  }

  /** The run's end: timers cleared, a save under way waited for, what is left saved. */
  async finish(): Promise<NotebookRunResult> {
    this.close();
    this.options.signal?.removeEventListener("abort", this.onAbort);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.turns; // a timed save under way
    if (this.timedError && !this.saveError) this.stopOnSaveError(this.timedError);
    if ((this.dirty || this.pending) && !this.saveError) {
      try {
        await this.serial(() => this.save());
      } catch (err) {
        this.stopOnSaveError(err);
      }
    }
    const { reports: cells, stopped, stopReason, merges, saves, repairedIds, saveError } = this;
    return { cells, stopped, stopReason, merges, saves, repairedIds, ...(saveError && { saveError }) };
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.turns.then(fn);
    this.turns = p.catch(() => {});
    return p;
  }

  private carry(cell: Cell, index: number, source: string, report?: CellRunReport): CarriedEntry {
    const known = this.carried.find((c) => c.cell === cell);
    if (known) return known;
    const id = typeof cell.id === "string" && cell.id ? cell.id : undefined;
    const entry = { id, index, source, cell, report };
    this.carried.push(entry);
    return entry;
  }

  /** Cells as loaded are frozen (a save reuses their bytes): thawCell swaps in a copy we may change. */
  private outputsOf(key: string): NbOutput[] | undefined {
    const nb = this.loaded.notebook;
    const i = nb.cells.findIndex((c, j) => cellKey(c, j) === key);
    if (nb.cells[i]?.cell_type !== "code") return undefined;
    const cell = thawCell(nb, i);
    this.carry(cell, i, cellSource(cell));
    return cell.outputs as NbOutput[];
  }

  /** Re-reads the file and carries this run's outputs into it (a writer changed it meanwhile). */
  private async refresh(): Promise<void> {
    const { loaded } = this;
    const fresh = await loadNotebook(loaded.path, loaded.path, { roots: loaded.roots });
    // The path is now a link to another file (a kernel or another user could put one there): the
    // run's outputs are not written into a file nobody named.
    if (fresh.path !== loaded.path)
      throw new NotebookFileError(
        "conflict",
        `${loaded.path} was replaced by a link to ${fresh.path} during the run; nothing was written there`,
      );
    const sameCount = fresh.notebook.cells.length === this.cellCount;
    for (const entry of [...this.carried]) {
      const fate = carryInto(fresh.notebook, entry, sameCount);
      if (fate.kind === "gone") {
        this.carried.splice(this.carried.indexOf(entry), 1);
        if (entry.report) entry.report.notSaved = fate.why;
      } else if (fate.sourceChanged && entry.report) {
        entry.report.editedWhileRunning = true;
      }
    }
    recordLanguageInfo(fresh.notebook, this.options.languageInfo);
    // The file as a run of this process last saved it (e.g. a cancelled run saving what completed
    // while this one waited for the kernel) is no other writer's change: nothing to report.
    const own = lastRunSave.get(loaded.path) === statKey(fresh.fingerprint);
    Object.assign(loaded, fresh);
    this.cellCount = fresh.notebook.cells.length;
    if (!own) this.merges++;
  }

  /** Saves, merging into the file as it is now when another writer changed it. */
  private save(): Promise<void> {
    const { loaded } = this;
    return inFileTurn(fileTurnKey(loaded.path), async () => {
      for (let tries = 1; ; tries++) {
        for (const c of this.carried)
          for (const out of (c.cell.outputs as NbOutput[]) ?? []) splitOutputLines(out);
        recordWidgetState(loaded.notebook, this.widgets);
        try {
          await saveNotebook(loaded);
          lastRunSave.set(loaded.path, statKey(loaded.fingerprint));
          this.saves++;
          this.options.onSaved?.(
            loaded.path,
            this.carried.flatMap((c) => (c.id ? [c.id] : [])),
          );
          return;
        } catch (err) {
          if (!(err instanceof NotebookFileError) || err.code !== "conflict" || tries >= SAVE_TRIES)
            throw err;
        }
        await this.refresh();
      }
    });
  }

  /** Saves what completed: a running cell goes into the file as it was before its run. */
  private saveCompleted(): Promise<void> {
    return this.serial(async () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      if (!this.pending) return;
      this.pending = false;
      this.lastSave = performance.now();
      const run = this.running;
      if (!run) {
        await this.save();
        this.dirty = false;
        return;
      }
      const nb = this.loaded.notebook;
      const countBefore = this.cellCount;
      const at = nb.cells.indexOf(run.entry.cell);
      const i = this.carried.indexOf(run.entry);
      if (at >= 0) nb.cells[at] = run.before;
      if (i >= 0) this.carried.splice(i, 1);
      try {
        await this.save();
      } finally {
        if (this.loaded.notebook === nb) {
          if (at >= 0) nb.cells[at] = run.entry.cell;
          if (i >= 0) this.carried.push(run.entry);
        } else if (i >= 0) {
          // Merged into a newer file meanwhile: the running cell goes to its place there.
          const fate = carryInto(
            this.loaded.notebook,
            run.entry,
            this.loaded.notebook.cells.length === countBefore,
          );
          if (fate.kind === "gone") {
            if (run.entry.report) run.entry.report.notSaved = fate.why;
          } else {
            if (fate.sourceChanged && run.entry.report) run.entry.report.editedWhileRunning = true;
            this.carried.push(run.entry);
          }
        }
      }
    });
  }

  /** A timed save of what completed, now (on abort) or when the interval since the last one is over. */
  private saveSoon(now = false): void {
    if (!this.pending || this.saveError || this.timedError) return;
    const wait = now ? 0 : Math.max(0, this.lastSave + this.interval - performance.now());
    if (this.timer && !now) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.saveCompleted().catch((err) => {
        this.timedError = err;
      });
    }, wait);
  }

  /** A save failed for good: the run stops, and the outputs it carried are said to be unsaved. */
  private stopOnSaveError(err: unknown): void {
    if (!(err instanceof NotebookFileError)) throw err;
    this.saveError = err;
    for (const c of this.carried) if (c.report && !c.report.notSaved) c.report.notSaved = "save-failed";
    this.stopped = true;
    this.stopReason = "the notebook could not be saved";
  }
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
