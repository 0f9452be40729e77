/** tags: adds and/or removes one cell's metadata tags without re-sending the others. */
import { type Cell, changeCellTags, type TagChange, thawCell } from "../../../notebook/index.js";
import { type ActionHandler, cellDetails, ok, save, targetIndex } from "./context.js";

/** "raises-exception, slow (added raises-exception; removed old)" — or "none". */
export function tagSummary(change: TagChange): string {
  const what = [
    ...(change.added.length ? [`added ${change.added.join(", ")}`] : []),
    ...(change.removed.length ? [`removed ${change.removed.join(", ")}`] : []),
  ];
  const list = change.tags.length ? change.tags.join(", ") : "none";
  return `${list} (${what.length ? what.join("; ") : "unchanged"})`;
}

export function cellName(index: number, cell: Cell): string {
  return `cell ${index}${typeof cell.id === "string" ? ` (id ${cell.id})` : ""}`;
}

export const tags: ActionHandler = async (ctx) => {
  const { params: p, loaded } = ctx;
  const index = targetIndex(ctx)!;
  const cell = thawCell(loaded.notebook, index);
  const change = changeCellTags(cell, { add: p.add, remove: p.remove });
  if (change.added.length || change.removed.length) await save(ctx);
  const notSaved = change.added.length || change.removed.length ? "" : " The file is unchanged.";
  return ok(
    `Tags of ${cellName(index, cell)}: ${tagSummary(change)}.${notSaved}`,
    cellDetails(ctx, index, cell, undefined),
  );
};
