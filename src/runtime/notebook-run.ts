/**
 * Runs a notebook's cells in a kernel and writes the outputs back into the file, the way nbclient
 * does: code cells only, whitespace-only cells and `skip-execution` cells left as they are, outputs
 * replaced per executed cell, stop at the first error unless errors are allowed (globally or by the
 * cell's `raises-exception` tag). The file is saved atomically as cells complete — at most once a
 * second (a save costs two fsyncs and a rename: once per cell, it was most of a run of quick cells),
 * and always at the end, on an error, a save failure's stop and as soon as the run is aborted — so a
 * crash mid-run keeps what ran, a SIGKILL losing at most the cells that completed in the last second
 * (docs/runs.md, "Saves during a run"). A save while a cell runs writes that cell as it was before
 * its run: the file only ever holds completed cells' outputs. The file may change underneath (the
 * agent's own edits, a person's editor):
 * each cell is found by id when its turn comes and runs with its current source, and each save
 * merges the run's outputs into the file as it is then (docs/notebook-tool.md, "A run merges with
 * other edits").
 */
import type { ExecuteOptions, ExecuteResult } from "../kernel/types.js";
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
} from "../notebook/index.js";
import { CellOutputCollector, type DisplayRegistry, type NbOutput } from "./collector.js";
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
  /** Absolute deadline (performance.now() scale) for the whole run. */
  deadline?: number;
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

export async function runNotebookCells(options: NotebookRunOptions): Promise<NotebookRunResult> {
  const { loaded, registry } = options;
  const widgets = options.widgets ?? new WidgetStates();
  // A run finds each cell by id when its turn comes: ids shared by two cells are made unique first,
  // as nbformat does on read, and saved before any cell runs (so a merge finds them again).
  const repairedIds = [...(options.repaired ?? []), ...repairDuplicateIds(loaded.notebook)];
  const reports: CellRunReport[] = [];
  // Cells whose outputs this run wrote (ran, or had a display updated), with their reports.
  const carried: (CarriedCell & { report?: CellRunReport })[] = [];
  const saveEach = options.saveEachCell !== false;
  const interval = options.saveIntervalMs ?? SAVE_INTERVAL_MS;
  // The planned cells, by id when they have one: their positions may move under other edits.
  const plan = options.indices.map((index) => {
    const cell = loaded.notebook.cells[index];
    const id = typeof cell?.id === "string" && cell.id ? cell.id : undefined;
    return { index, id, source: cell ? cellSource(cell) : "" };
  });
  const plannedCount = loaded.notebook.cells.length;
  let cellCount = plannedCount;
  let merges = 0;
  let saves = 0;
  let saveError: NotebookFileError | undefined;

  const carry = (cell: Cell, index: number, source: string, report?: CellRunReport) => {
    const known = carried.find((c) => c.cell === cell);
    if (known) return known;
    const id = typeof cell.id === "string" && cell.id ? cell.id : undefined;
    const entry = { id, index, source, cell, report };
    carried.push(entry);
    return entry;
  };
  // Cells as loaded are frozen (a save reuses their bytes): thawCell swaps in a copy we may change.
  const outputsOf = (key: string): NbOutput[] | undefined => {
    const nb = loaded.notebook;
    const i = nb.cells.findIndex((c, j) => cellKey(c, j) === key);
    if (nb.cells[i]?.cell_type !== "code") return undefined;
    const cell = thawCell(nb, i);
    carry(cell, i, cellSource(cell));
    return cell.outputs as NbOutput[];
  };
  /** Re-reads the file and carries this run's outputs into it (a writer changed it meanwhile). */
  const refresh = async () => {
    const fresh = await loadNotebook(loaded.path, loaded.path, { roots: loaded.roots });
    // The path is now a link to another file (a kernel or another user could put one there): the
    // run's outputs are not written into a file nobody named.
    if (fresh.path !== loaded.path)
      throw new NotebookFileError(
        "conflict",
        `${loaded.path} was replaced by a link to ${fresh.path} during the run; nothing was written there`,
      );
    const sameCount = fresh.notebook.cells.length === cellCount;
    for (const entry of [...carried]) {
      const fate = carryInto(fresh.notebook, entry, sameCount);
      if (fate.kind === "gone") {
        carried.splice(carried.indexOf(entry), 1);
        if (entry.report) entry.report.notSaved = fate.why;
      } else if (fate.sourceChanged && entry.report) {
        entry.report.editedWhileRunning = true;
      }
    }
    recordLanguageInfo(fresh.notebook, options.languageInfo);
    // The file as a run of this process last saved it (e.g. a cancelled run saving what completed
    // while this one waited for the kernel) is no other writer's change: nothing to report.
    const own = lastRunSave.get(loaded.path) === statKey(fresh.fingerprint);
    Object.assign(loaded, fresh);
    cellCount = fresh.notebook.cells.length;
    if (!own) merges++;
  };
  /** Saves, merging into the file as it is now when another writer changed it. */
  const save = () =>
    inFileTurn(fileTurnKey(loaded.path), async () => {
      for (let tries = 1; ; tries++) {
        for (const c of carried)
          for (const out of (c.cell.outputs as NbOutput[]) ?? []) splitOutputLines(out);
        recordWidgetState(loaded.notebook, widgets);
        try {
          await saveNotebook(loaded);
          lastRunSave.set(loaded.path, statKey(loaded.fingerprint));
          saves++;
          options.onSaved?.(
            loaded.path,
            carried.flatMap((c) => (c.id ? [c.id] : [])),
          );
          return;
        } catch (err) {
          if (!(err instanceof NotebookFileError) || err.code !== "conflict" || tries >= SAVE_TRIES)
            throw err;
        }
        await refresh();
      }
    });

  // Saves and refreshes take turns (a timed save may come while the loop looks at the file).
  let turns: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = turns.then(fn);
    turns = p.catch(() => {});
    return p;
  };
  // The cell running now: its entry and the cell as it was before its run.
  let running: { entry: (typeof carried)[number]; before: Cell } | undefined;
  let lastSave = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Completed cells' outputs not saved yet (a save came too soon after the last one).
  let pending = false;
  // A timed save that failed: the loop stops with it when the running cell ends.
  let timedError: unknown;

  /** Saves what completed: a running cell goes into the file as it was before its run. */
  const saveCompleted = () =>
    serial(async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (!pending) return;
      pending = false;
      lastSave = performance.now();
      const run = running;
      if (!run) {
        await save();
        dirty = false;
        return;
      }
      const nb = loaded.notebook;
      const countBefore = cellCount;
      const at = nb.cells.indexOf(run.entry.cell);
      const i = carried.indexOf(run.entry);
      if (at >= 0) nb.cells[at] = run.before;
      if (i >= 0) carried.splice(i, 1);
      try {
        await save();
      } finally {
        if (loaded.notebook === nb) {
          if (at >= 0) nb.cells[at] = run.entry.cell;
          if (i >= 0) carried.push(run.entry);
        } else if (i >= 0) {
          // Merged into a newer file meanwhile: the running cell goes to its place there.
          const fate = carryInto(loaded.notebook, run.entry, loaded.notebook.cells.length === countBefore);
          if (fate.kind === "gone") {
            if (run.entry.report) run.entry.report.notSaved = fate.why;
          } else {
            if (fate.sourceChanged && run.entry.report) run.entry.report.editedWhileRunning = true;
            carried.push(run.entry);
          }
        }
      }
    });
  /** A timed save of what completed, now (on abort) or when the interval since the last one is over. */
  const saveSoon = (now = false) => {
    if (!pending || saveError || timedError) return;
    const wait = now ? 0 : Math.max(0, lastSave + interval - performance.now());
    if (timer && !now) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      saveCompleted().catch((err) => {
        timedError = err;
      });
    }, wait);
  };
  const onAbort = () => saveSoon(true);
  options.signal?.addEventListener("abort", onAbort, { once: true });

  let stopped = false;
  let stopReason: string | undefined;
  const stopOnSaveError = (err: unknown) => {
    if (!(err instanceof NotebookFileError)) throw err;
    saveError = err;
    for (const c of carried) if (c.report && !c.report.notSaved) c.report.notSaved = "save-failed";
    stopped = true;
    stopReason = "the notebook could not be saved";
  };
  let dirty = recordLanguageInfo(loaded.notebook, options.languageInfo);
  if (repairedIds.length > 0) {
    try {
      await serial(save);
      dirty = false;
    } catch (err) {
      stopOnSaveError(err);
    }
  }
  for (const planned of plan) {
    const notRun = (status: CellRunStatus, reason: string | undefined, now?: number) => {
      const report: CellRunReport = {
        index: planned.index,
        ...(now !== undefined && now !== planned.index && { indexNow: now }),
        ...(planned.id !== undefined && { id: planned.id }),
        status,
        reason,
        executionCount: null,
        durationMs: 0,
      };
      reports.push(report);
      options.onCellEnd?.(report); // the model is told which selected cells did not run
    };
    if (stopped) {
      notRun("not-run", stopReason);
      continue;
    }
    // Another writer changed the file: take it as it is now (this cell's current source, its place).
    try {
      await serial(async () => {
        if (timedError) throw timedError;
        if (await changedOnDisk(loaded)) await refresh();
      });
    } catch (err) {
      stopOnSaveError(err);
      notRun("not-run", stopReason);
      continue;
    }
    const nb = loaded.notebook;
    const index =
      planned.id !== undefined
        ? findCellById(nb, planned.id)
        : nb.cells.length === plannedCount
          ? planned.index
          : -1;
    if (index < 0) {
      notRun(
        "deleted",
        planned.id !== undefined
          ? "deleted from the notebook before its turn"
          : "the notebook changed on disk and its cells have no ids, so this cell could not be found again",
      );
      continue;
    }
    let cell = nb.cells[index];
    const skip = skipReason(cell);
    if (skip) {
      notRun("skipped", skip, index);
      continue;
    }
    // What a save while it runs writes for it (the run below changes the thawed cell in place).
    const before = Object.isFrozen(cell)
      ? cell
      : ({ ...cell, metadata: { ...(cell.metadata as Record<string, unknown>) } } as Cell);
    cell = thawCell(nb, index);
    options.onCellStart?.(planned.index, cell, index);
    const started = performance.now();
    const key = cellKey(cell, index);
    registry.clearCell(key);
    const outputs: NbOutput[] = [];
    cell.outputs = outputs as unknown as JsonValue;
    cell.execution_count = null;
    const code = cellSource(cell);
    const report: CellRunReport = {
      index: planned.index,
      ...(index !== planned.index && { indexNow: index }),
      ...(planned.id !== undefined && { id: planned.id }),
      status: "ok",
      executionCount: null,
      durationMs: 0,
      ...(code !== planned.source && { editedBeforeRun: true }),
    };
    const entry = carry(cell, index, code, report);
    entry.report = report;
    entry.source = code;
    running = { entry, before };
    if (options.recordTiming) (cell.metadata as Record<string, unknown>).execution = {};
    const collector = new CellOutputCollector({
      cellKey: key,
      outputs,
      registry,
      outputsOf,
      timingMetadata: options.recordTiming ? (cell.metadata as Record<string, unknown>) : undefined,
      widgets,
    });
    const remaining =
      options.deadline === undefined ? undefined : Math.max(1, options.deadline - performance.now());
    const timeoutMs = minDefined(options.cellTimeoutMs, remaining);
    const result = await options
      .execute(code, {
        ...options.executeHooks?.(planned.index),
        ...(planned.id !== undefined && { cellId: planned.id }),
        signal: options.signal,
        timeoutMs,
        onIOPub: (msg) => collector.handle(msg),
      })
      .catch(async (err: unknown) => {
        // The run ends here: what completed goes into the file (this cell as it was), as before.
        options.signal?.removeEventListener("abort", onAbort);
        await saveCompleted().catch(() => {});
        throw err;
      });
    // A timed save may be under way (and may have merged the cell into a newer file): wait for it.
    await serial(async () => {
      running = undefined;
    });
    cell = entry.cell;
    // Timed only when a reply came: none does when the kernel went idle without one, died or was restarted.
    collector.replied(result.replyDate, result.executionCount);
    cell.execution_count = collector.executionCount;
    dirty = true;

    const allowsErrors = options.allowErrors === true || tags(cell).includes(RAISES_TAG);
    let status: CellRunStatus =
      result.status === "ok" ? "ok" : result.cancelled || result.timedOut ? "aborted" : "error";
    if (result.kernelDied) status = "aborted";
    report.status = status;
    if (status === "error" && tags(cell).includes(RAISES_TAG)) report.expectedError = true;
    report.executionCount = cell.execution_count as number | null;
    report.result = result;
    report.durationMs = performance.now() - started;
    if (status === "aborted") {
      stopped = true;
      stopReason = result.kernelDied ? "the kernel died" : result.timedOut ? "timed out" : "cancelled";
    } else if (status === "error" && !allowsErrors) {
      stopped = true;
      stopReason = `cell ${planned.index} failed`;
    }
    if (timedError) {
      stopOnSaveError(timedError);
    } else if (saveEach || stopped) {
      pending = true;
      if (stopped || options.signal?.aborted || performance.now() - lastSave >= interval) {
        try {
          await saveCompleted();
          dirty = false;
        } catch (err) {
          stopOnSaveError(err);
        }
      } else {
        saveSoon();
      }
    }
    reports.push(report);
    options.onCellEnd?.(report);
  }
  options.signal?.removeEventListener("abort", onAbort);
  if (timer) clearTimeout(timer);
  timer = undefined;
  await turns; // a timed save under way
  if (timedError && !saveError) stopOnSaveError(timedError);
  if ((dirty || pending) && !saveError) {
    try {
      await serial(save);
    } catch (err) {
      stopOnSaveError(err);
    }
  }
  return { cells: reports, stopped, stopReason, merges, saves, repairedIds, ...(saveError && { saveError }) };
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
