/** delete: removes a cell; details keep its source. */
import { cellSource } from "../../notebook/index.js";
import { type ActionHandler, cellTag, nowHas, ok, save, targetIndex } from "./context.js";

export const remove: ActionHandler = async (ctx) => {
  const index = targetIndex(ctx)!;
  const [cell] = ctx.loaded.notebook.cells.splice(index, 1);
  await save(ctx);
  return ok(`Deleted cell ${index} (${cellTag(cell)}). ${nowHas(ctx)}`, {
    ...ctx.details,
    cellIndex: index,
    cellId: cell.id as string | undefined,
    cellType: cell.cell_type,
    totalCells: ctx.loaded.notebook.cells.length,
    cellSource: cellSource(cell),
  });
};
