/**
 * The notebook tool's public types: its details, and the interface the runtime layer implements to
 * run cells (docs/notebook-tool.md, "run and the notebook's kernel"). notebook.ts re-exports them.
 */

import type { KeptKernelLimits } from "../kernel-text.js";
import type { ImageDetails } from "../python/images.js";
import type { ToolResult, ToolUpdate } from "../types.js";
import type { NotebookParams } from "./params.js";
import type { ReadCell } from "./read.js";

export interface NotebookDetails {
  action: string;
  notebookPath?: string;
  cellIndex?: number;
  cellId?: string;
  cellType?: string;
  totalCells?: number;
  /** The cell's source after the change (for delete: the removed source). */
  cellSource?: string;
  toIndex?: number;
  clearedCells?: number;
  cells?: ReadCell[];
  nextOffset?: number;
  warnings?: string[];
  error?: string;
  /** The insert created the notebook file. */
  created?: boolean;
  /** With `execute: true`: the executor's details for the run that followed the edit. */
  run?: unknown;
  /** read: the saved images its text names, in document order, and what was sent of each. */
  images?: ReadImageDetails[];
}

/** One saved image a read named: sent (downscaled) as an image content, or why not. */
export interface ReadImageDetails extends ImageDetails {
  cell: number;
  output: number;
}

/** What the runtime layer implements to run cells of a saved notebook in its kernel. */
export interface NotebookRunRequest {
  /** Real absolute path of the notebook (already saved when called after an edit). */
  path: string;
  /** Under --sandbox: the folders it must stay in (every load and save of the run checks). */
  roots?: readonly string[];
  /** The path as the user gave it, for messages. */
  shownPath: string;
  /** Indices of the cells to run, in order. */
  cellIndices: number[];
  /**
   * The one cell to run, by id (edit/insert with execute: true): found again in the file as the run
   * loads it, since other calls may have moved it after the edit's turn ended.
   */
  cellId?: string;
  params: NotebookParams;
  signal?: AbortSignal;
  onUpdate?: ToolUpdate<unknown>;
}

export interface NotebookExecutor {
  run(request: NotebookRunRequest): Promise<ToolResult<unknown>>;
  /** The kernels' keep rules, for the tool's description (default: 5 minutes idle, 4 kept). */
  limits?: KeptKernelLimits;
  /** Runs still going after their wait go on in the background (docs/runs.md): no default timeout. */
  background?: boolean;
  /** Bytes of output text a run shows the model, for the tool's description (default CALL_OUTPUT_BYTES). */
  maxOutputBytes?: number;
}
