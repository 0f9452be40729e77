/**
 * Runs a notebook's cells in a kernel and writes the outputs back into the file, the way nbclient
 * does: code cells only, whitespace-only cells and `skip-execution` cells left as they are, outputs
 * replaced per executed cell, stop at the first error unless errors are allowed (globally or by the
 * cell's `raises-exception` tag). The file is saved atomically after every executed cell, so a crash
 * mid-run keeps what ran; a file changed underneath stops the run instead of being overwritten.
 */
import type { ExecuteOptions, ExecuteResult } from "../kernel/types.js";
import {
  type Cell,
  type JsonValue,
  type LoadedNotebook,
  type Notebook,
  saveNotebook,
  splitOutputLines,
  thawCell,
} from "../notebook/index.js";
import { CellOutputCollector, type DisplayRegistry, type NbOutput } from "./collector.js";

export type CellRunStatus = "ok" | "error" | "skipped" | "aborted" | "not-run";

export interface CellRunReport {
  index: number;
  id?: string;
  status: CellRunStatus;
  /** Why a cell was skipped or not run. */
  reason?: string;
  /** An error the cell's raises-exception tag says to expect (nbclient does not count it as a failure). */
  expectedError?: boolean;
  executionCount: number | null;
  result?: ExecuteResult;
  durationMs: number;
}

export interface NotebookRunOptions {
  loaded: LoadedNotebook;
  /** Indices of the cells to run, in order. */
  indices: number[];
  /** Runs one cell's code: a kernel's execute, or a session lease's (with its restart rules). */
  execute: (code: string, options: ExecuteOptions) => Promise<ExecuteResult>;
  /** display_id map that lives as long as the notebook's kernel session. */
  registry: DisplayRegistry;
  allowErrors?: boolean;
  /** Record nbclient-style timing in metadata.execution. */
  recordTiming?: boolean;
  /** Save after every executed cell (default true); false saves once at the end. */
  saveEachCell?: boolean;
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
  /** Hooks per cell, for model-facing output (the tool) or progress (the CLI). */
  onCellStart?: (index: number, cell: Cell) => void;
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
  /** The run stopped early (error, abort, kernel death, save conflict). */
  stopped: boolean;
  stopReason?: string;
}

export const SKIP_TAG = "skip-execution";
export const RAISES_TAG = "raises-exception";

function tags(cell: Cell): string[] {
  const t = (cell.metadata as { tags?: unknown }).tags;
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : [];
}

function sourceText(cell: Cell): string {
  return Array.isArray(cell.source) ? cell.source.join("") : String(cell.source ?? "");
}

/** Why nbclient would not execute this cell, or undefined when it runs. */
export function skipReason(cell: Cell): string | undefined {
  if (cell.cell_type !== "code") return `${cell.cell_type} cell`;
  if (sourceText(cell).trim() === "") return "empty cell";
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

export async function runNotebookCells(options: NotebookRunOptions): Promise<NotebookRunResult> {
  const { loaded, registry } = options;
  const nb = loaded.notebook;
  const reports: CellRunReport[] = [];
  const touched = new Set<Cell>();
  const saveEach = options.saveEachCell !== false;
  // Cells as loaded are frozen (a save reuses their bytes): thawCell swaps in a copy we may change.
  const outputsOf = (key: string): NbOutput[] | undefined => {
    const i = nb.cells.findIndex((c, j) => cellKey(c, j) === key);
    if (nb.cells[i]?.cell_type !== "code") return undefined;
    const cell = thawCell(nb, i);
    touched.add(cell);
    return cell.outputs as NbOutput[];
  };
  const save = async () => {
    for (const cell of touched) for (const out of (cell.outputs as NbOutput[]) ?? []) splitOutputLines(out);
    await saveNotebook(loaded);
  };

  let stopped = false;
  let stopReason: string | undefined;
  let dirty = recordLanguageInfo(nb, options.languageInfo);
  for (const index of options.indices) {
    let cell = nb.cells[index];
    if (stopped) {
      const report: CellRunReport = {
        index,
        id: cell?.id as string | undefined,
        status: "not-run",
        reason: stopReason,
        executionCount: null,
        durationMs: 0,
      };
      reports.push(report);
      options.onCellEnd?.(report); // the model is told which selected cells did not run
      continue;
    }
    const skip = skipReason(cell);
    if (skip) {
      const report: CellRunReport = {
        index,
        id: cell.id as string | undefined,
        status: "skipped",
        reason: skip,
        executionCount: null,
        durationMs: 0,
      };
      reports.push(report);
      options.onCellEnd?.(report);
      continue;
    }
    cell = thawCell(nb, index);
    options.onCellStart?.(index, cell);
    const started = performance.now();
    const key = cellKey(cell, index);
    registry.clearCell(key);
    const outputs: NbOutput[] = [];
    cell.outputs = outputs as unknown as JsonValue;
    cell.execution_count = null;
    touched.add(cell);
    if (options.recordTiming) (cell.metadata as Record<string, unknown>).execution = {};
    const collector = new CellOutputCollector({
      cellKey: key,
      outputs,
      registry,
      outputsOf,
      timingMetadata: options.recordTiming ? (cell.metadata as Record<string, unknown>) : undefined,
    });
    const remaining =
      options.deadline === undefined ? undefined : Math.max(1, options.deadline - performance.now());
    const timeoutMs = minDefined(options.cellTimeoutMs, remaining);
    const result = await options.execute(sourceText(cell), {
      ...options.executeHooks?.(index),
      signal: options.signal,
      timeoutMs,
      onIOPub: (msg) => collector.handle(msg),
    });
    collector.replied(new Date().toISOString(), result.executionCount);
    cell.execution_count = collector.executionCount;
    dirty = true;

    const allowsErrors = options.allowErrors === true || tags(cell).includes(RAISES_TAG);
    let status: CellRunStatus =
      result.status === "ok" ? "ok" : result.cancelled || result.timedOut ? "aborted" : "error";
    if (result.kernelDied) status = "aborted";
    const report: CellRunReport = {
      index,
      id: cell.id as string | undefined,
      status,
      expectedError: status === "error" && tags(cell).includes(RAISES_TAG) ? true : undefined,
      executionCount: cell.execution_count as number | null,
      result,
      durationMs: performance.now() - started,
    };
    if (status === "aborted") {
      stopped = true;
      stopReason = result.kernelDied ? "the kernel died" : result.timedOut ? "timed out" : "cancelled";
    } else if (status === "error" && !allowsErrors) {
      stopped = true;
      stopReason = `cell ${index} failed`;
    }
    if (saveEach || stopped) {
      try {
        await save();
        dirty = false;
      } catch (err) {
        reports.push(report);
        options.onCellEnd?.(report);
        throw err;
      }
    }
    reports.push(report);
    options.onCellEnd?.(report);
  }
  if (dirty) await save();
  return { cells: reports, stopped, stopReason };
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
