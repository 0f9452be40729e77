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
  type SaveResult,
  saveNotebook,
  supportsCellIds,
} from "../../../notebook/index.js";
import type { ImageBudget } from "../../../output/model-budgets.js";
import { pluralBare } from "../../../sys/units.js";
import { fileErrorText } from "../../sandbox-paths.js";
import type { ToolResult, ToolUpdate } from "../../types.js";
import type { NotebookParams } from "../params.js";
import { firstLine } from "../seen.js";
import type { NotebookDetails, NotebookExecutor } from "../types.js";

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
  /** The image budget of a read result (default: the python tool's, DEFAULT_IMAGE_BUDGET). */
  images?: ImageBudget;
  /** What nbformat would reject in the file as loaded (notebook/problems.ts). */
  check?: NotebookCheck;
  signal?: AbortSignal;
  onUpdate?: ToolUpdate<unknown>;
  /** What the saves of this call must tell the user besides the change (filled by save()). */
  saveNotes?: string[];
  /**
   * Defers work until this call's turn on the file has ended (notebook.ts): a cell run by
   * `execute: true` must not hold the turn, because the run's own saves take turns.
   */
  afterTurn?: (next: (result: ToolResult<NotebookDetails>) => Promise<ToolResult<NotebookDetails>>) => void;
}

export type ActionHandler = (ctx: ActionContext) => Promise<ToolResult<NotebookDetails>>;

/** A refusal: execute() turns it into an Error: result (the file is unchanged). */
export class ToolError extends Error {}

export function ok(text: string, details: NotebookDetails): ToolResult<NotebookDetails> {
  return { content: [{ type: "text", text }], details };
}

/** The details of a result about one cell: the call's, plus the cell's index, id, type and source. */
export function cellDetails(
  ctx: ActionContext,
  index: number,
  cell: Cell,
  source: string | undefined,
): NotebookDetails {
  return {
    ...ctx.details,
    cellIndex: index,
    cellId: cell.id as string | undefined,
    cellType: cell.cell_type,
    totalCells: ctx.loaded.notebook.cells.length,
    cellSource: source,
  };
}

/** "code, id 1a2b3c4d" (the id only when the cell has one). */
export function cellTag(cell: Cell): string {
  return typeof cell.id === "string" ? `${cell.cell_type}, id ${cell.id}` : cell.cell_type;
}

/**
 * A cell's source as a result echoes what it replaced or removed: `"x = 1"`, `"for i in r:" (3 lines)`
 * (the first non-empty line), or `empty`.
 */
export function sourceHead(source: string): string {
  const lines = source.replace(/\n$/, "").split("\n").length;
  const head = firstLine(source);
  return head === "empty" || lines === 1 ? head : `${head} (${lines} lines)`;
}

/** "Notebook now has 3 cells." */
export function nowHas(ctx: ActionContext): string {
  return `Notebook now has ${pluralBare(ctx.loaded.notebook.cells.length, "cell")}.`;
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

/**
 * Writes the notebook back (atomic; refused when the file changed on disk since it was read or the
 * user could not write it). What the new file could not keep is noted for the result text.
 */
export async function save(ctx: ActionContext): Promise<void> {
  let result: SaveResult;
  try {
    result = await saveNotebook(ctx.loaded, ctx.shownPath);
  } catch (e) {
    if (e instanceof NotebookFileError) throw new ToolError(fileErrorText(e, ctx.shownPath));
    throw e;
  }
  const notes = saveNotes(result, ctx.shownPath);
  if (notes.length) ctx.saveNotes = [...(ctx.saveNotes ?? []), ...notes];
}

const octal = (mode: number) => mode.toString(8).padStart(4, "0");

/** The sentences a save result needs (docs/notebook-tool.md, "Files"). */
export function saveNotes(result: SaveResult, shownPath: string): string[] {
  const notes: string[] = [];
  if (result.otherLinks > 0) {
    const n = result.otherLinks;
    notes.push(
      `Note: ${shownPath} had ${pluralBare(n, "other hard link")}; the save wrote a new file, so ${n === 1 ? "that name still shows" : "those names still show"} the old version.`,
    );
  }
  const { uid, gid, mode } = result.notKept;
  const lost = [
    ...(uid ? [`owner uid ${uid[1]} (was ${uid[0]})`] : []),
    ...(gid ? [`group gid ${gid[1]} (was ${gid[0]})`] : []),
    ...(mode ? [`mode ${octal(mode[1])} (was ${octal(mode[0])})`] : []),
  ];
  if (lost.length) {
    notes.push(
      `Note: the saved file has ${lost.join(", ")}: this user may not give a file that ${lost.length === 1 ? "attribute" : "ownership and mode"}.`,
    );
  }
  return notes;
}

/** The result with the save notes after its first paragraph (the change's summary). */
export function withSaveNotes(
  ctx: ActionContext,
  result: ToolResult<NotebookDetails>,
): ToolResult<NotebookDetails> {
  const first = result.content[0];
  if (!ctx.saveNotes?.length || first?.type !== "text") return result;
  return {
    ...result,
    content: [{ ...first, text: `${first.text}\n${ctx.saveNotes.join("\n")}` }, ...result.content.slice(1)],
  };
}

/**
 * With `execute: true`: runs cell `index` after the save and appends the run's result — once the
 * call's turn on the file has ended, finding the cell again by its id (docs/notebook-tool.md).
 */
export async function thenRun(
  ctx: ActionContext,
  result: ToolResult<NotebookDetails>,
  index: number,
): Promise<ToolResult<NotebookDetails>> {
  const executor = ctx.executor;
  if (ctx.params.execute !== true || !executor) return result;
  const id = ctx.loaded.notebook.cells[index]?.id;
  const go = async (edited: ToolResult<NotebookDetails>): Promise<ToolResult<NotebookDetails>> => {
    const run = await executor.run({
      path: ctx.loaded.path,
      ...(ctx.loaded.roots ? { roots: ctx.loaded.roots } : {}),
      shownPath: ctx.shownPath,
      cellIndices: [index],
      ...(typeof id === "string" && id ? { cellId: id } : {}),
      params: ctx.params,
      signal: ctx.signal,
      onUpdate: ctx.onUpdate,
    });
    return {
      ...run,
      content: [...edited.content, ...run.content],
      details: { ...edited.details, run: run.details },
    };
  };
  if (!ctx.afterTurn) return go(result);
  ctx.afterTurn(go);
  return result;
}
