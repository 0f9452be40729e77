/** delete: removes a cell; details keep its source. */
import { cellSource } from "../../notebook/index.js";
import { type ActionHandler, cellDetails, cellTag, nowHas, ok, save, targetIndex } from "./context.js";

export const remove: ActionHandler = async (ctx) => {
  const index = targetIndex(ctx)!;
  const [cell] = ctx.loaded.notebook.cells.splice(index, 1);
  await save(ctx);
  return ok(
    `Deleted cell ${index} (${cellTag(cell)}). ${nowHas(ctx)}`,
    cellDetails(ctx, index, cell, cellSource(cell)),
  );
};
