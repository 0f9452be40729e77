/**
 * What every action handler of the notebook tool gets (the checked params and the loaded file), and
 * the pieces their result texts share: how a cell is named, plurals, saving, running after a save.
 * Texts follow docs/notebook-tool.md: cell indices are 0-based; a cell is named with its id when
 * the notebook has ids.
 */
import {
  type Cell,
  type LoadedNotebook,
  type NotebookCheck,
  NotebookFileError,
  saveNotebook,
  supportsCellIds,
} from "../../notebook/index.js";
import type { NotebookParams } from "../notebook-params.js";
import type { NotebookDetails, NotebookExecutor } from "../notebook-types.js";
import type { ToolResult, ToolUpdate } from "../types.js";

export interface ActionContext {
  params: NotebookParams;
  loaded: LoadedNotebook;
  /** The path as the model gave it (messages name the file this way). */
  shownPath: string;
  /** Details every result starts from (action, notebookPath). */
  details: NotebookDetails;
  executor?: NotebookExecutor;
  /** Character budget of a read result. */
  readBudget: number;
  /** What nbformat would reject in the file as loaded (notebook-problems.ts). */
  check?: NotebookCheck;
  signal?: AbortSignal;
  onUpdate?: ToolUpdate<unknown>;
}

export type ActionHandler = (ctx: ActionContext) => Promise<ToolResult<NotebookDetails>>;

/** A refusal: execute() turns it into an `Error:` result (the file is unchanged). */
export class ToolError extends Error {}

export function ok(text: string, details: NotebookDetails): ToolResult<NotebookDetails> {
  return { content: [{ type: "text", text }], details };
}

/** "1 cell", "2 cells". */
export function cells(n: number): string {
  return `${n} cell${n === 1 ? "" : "s"}`;
}

/** "code, id 1a2b3c4d" (the id only when the cell has one). */
export function cellTag(cell: Cell): string {
  return typeof cell.id === "string" ? `${cell.cell_type}, id ${cell.id}` : cell.cell_type;
}

/** "Notebook now has 3 cells." */
export function nowHas(ctx: ActionContext): string {
  return `Notebook now has ${cells(ctx.loaded.notebook.cells.length)}.`;
}

/**
 * The index of the cell the params name (cell_id or cell_index), checked against the notebook:
 * 0..count-1, or 0..count for insert. Undefined when neither is given.
 */
export function targetIndex(ctx: ActionContext, forInsert = false): number | undefined {
  const { params: p, loaded, shownPath } = ctx;
  const nb = loaded.notebook;
  const count = nb.cells.length;
  if (p.cell_id !== undefined) {
    const index = nb.cells.findIndex((c) => c.id === p.cell_id);
    if (index < 0) {
      const hint = supportsCellIds(nb)
        ? "Use action read to list cell ids."
        : "This notebook is older than nbformat 4.5 and has no cell ids; use cell_index.";
      throw new ToolError(`No cell with id ${JSON.stringify(p.cell_id)} in ${shownPath}. ${hint}`);
    }
    return index;
  }
  const index = p.cell_index;
  if (index === undefined) return undefined;
  if (forInsert && (index < 0 || index > count)) {
    throw new ToolError(`Cell index ${index} out of range for insert (0-${count}) in ${shownPath}`);
  }
  if (!forInsert && (index < 0 || index > count - 1)) {
    throw new ToolError(
      count === 0
        ? `Cell index ${index} out of range: ${shownPath} has no cells (insert at cell_index 0 adds one)`
        : `Cell index ${index} out of range (0-${count - 1}) in ${shownPath}`,
    );
  }
  return index;
}

/** Writes the notebook back (atomic; refused when the file changed on disk since it was read). */
export async function save(ctx: ActionContext): Promise<void> {
  try {
    await saveNotebook(ctx.loaded, ctx.shownPath);
  } catch (e) {
    if (e instanceof NotebookFileError) throw new ToolError(e.message);
    throw e;
  }
}

/** With `execute: true`: runs cell `index` after the save and appends the run's result. */
export async function thenRun(
  ctx: ActionContext,
  result: ToolResult<NotebookDetails>,
  index: number,
): Promise<ToolResult<NotebookDetails>> {
  if (ctx.params.execute !== true || !ctx.executor) return result;
  const run = await ctx.executor.run({
    path: ctx.loaded.path,
    shownPath: ctx.shownPath,
    cellIndices: [index],
    params: ctx.params,
    signal: ctx.signal,
    onUpdate: ctx.onUpdate,
  });
  return {
    ...run,
    content: [...result.content, ...run.content],
    details: { ...result.details, run: run.details },
  };
}
