/** insert: adds a cell at cell_index (or at the named cell's position), then runs it with execute: true. */
import { type CellType, cellTags, changeCellTags, createCell } from "../../../notebook/index.js";
import { type ActionHandler, cellDetails, nowHas, ok, save, targetIndex, thenRun } from "./context.js";

export const insert: ActionHandler = async (ctx) => {
  const { params: p, loaded } = ctx;
  const index = targetIndex(ctx, true)!;
  const nb = loaded.notebook;
  const cell = createCell(nb, (p.cell_type ?? "code") as CellType, p.content!);
  if (p.tags?.length) changeCellTags(cell, { set: p.tags });
  nb.cells.splice(index, 0, cell);
  await save(ctx);
  const id = typeof cell.id === "string" ? ` (id ${cell.id})` : "";
  const tagText = cellTags(cell).length ? ` Tags: ${cellTags(cell).join(", ")}.` : "";
  const result = ok(
    `Inserted ${cell.cell_type} cell at position ${index}${id}.${tagText} ${nowHas(ctx)}`,
    cellDetails(ctx, index, cell, p.content),
  );
  return thenRun(ctx, result, index);
};
