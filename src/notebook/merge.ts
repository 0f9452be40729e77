/**
 * Carrying a run's outputs into a newer version of its notebook (docs/notebook-tool.md, "A run
 * merges with other edits"): the file changed on disk while cells ran — another call of the agent,
 * a person's editor, any program — so each save re-reads it and writes the run's outputs into the
 * cells they belong to, found by cell id. Everything else of the newer file is kept.
 */
import { type Cell, cellSource, findCellById, type Notebook, thawCell } from "./model.js";

/** A cell whose outputs a run wrote: the working copy that holds them, and how to find it again. */
export interface CarriedCell {
  /** Its id; undefined for a cell without one (nbformat < 4.5), found by position instead. */
  id?: string;
  /** Its position in the version of the file the working copy belongs to. */
  index: number;
  /** The source it ran with (a display update of an earlier cell: its source then). */
  source: string;
  /** The working copy: outputs, execution_count and metadata.execution are carried from it. */
  cell: Cell;
}

/** What became of a carried cell in the newer file. */
export type CarryFate =
  /** Found, outputs written into it. */
  | { kind: "kept"; index: number; sourceChanged: boolean }
  /** No cell with its id any more (deleted), or, without ids, the cells cannot be matched. */
  | { kind: "gone"; why: "deleted" | "no-ids" };

/**
 * Writes `carried`'s outputs into the matching cell of `fresh` (thawed) and points `carried` at it.
 * Cells without ids are matched by position, and only while the cell count is the one they were
 * counted in (`sameCount`): a cell inserted or deleted anywhere makes positions meaningless.
 */
export function carryInto(fresh: Notebook, carried: CarriedCell, sameCount: boolean): CarryFate {
  let index: number;
  if (carried.id !== undefined) index = findCellById(fresh, carried.id);
  else if (!sameCount) return { kind: "gone", why: "no-ids" };
  else index = carried.index;
  const target = fresh.cells[index];
  if (target?.cell_type !== "code") {
    return { kind: "gone", why: carried.id !== undefined || !target ? "deleted" : "no-ids" };
  }
  const cell = thawCell(fresh, index);
  const from = carried.cell;
  cell.outputs = from.outputs;
  cell.execution_count = from.execution_count;
  const timing = (from.metadata as Record<string, unknown>).execution;
  if (timing !== undefined) (cell.metadata as Record<string, unknown>).execution = timing;
  carried.cell = cell;
  carried.index = index;
  return { kind: "kept", index, sourceChanged: cellSource(cell) !== carried.source };
}
