/** delete: removes a cell; details keep its source. */
import { cellSource } from "../../../notebook/index.js";
import { pluralBare } from "../../../sys/units.js";
import {
  type ActionHandler,
  cellDetails,
  cellTag,
  nowHas,
  ok,
  save,
  sourceHead,
  targetIndex,
} from "./context.js";

export const remove: ActionHandler = async (ctx) => {
  const index = targetIndex(ctx)!;
  const [cell] = ctx.loaded.notebook.cells.splice(index, 1);
  await save(ctx);
  const n = cell.cell_type === "code" && Array.isArray(cell.outputs) ? cell.outputs.length : 0;
  const outputs = n > 0 ? `, with ${pluralBare(n, "output")}` : "";
  return ok(
    `Deleted cell ${index} (${cellTag(cell)}; source ${sourceHead(cellSource(cell))}${outputs}). ${nowHas(ctx)}`,
    cellDetails(ctx, index, cell, cellSource(cell)),
  );
};
