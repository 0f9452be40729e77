/** move: moves a cell so that it ends up at to_index. */
import { cellSource, moveCell } from "../../../notebook/index.js";
import { type ActionHandler, cellTag, nowHas, ok, save, ToolError, targetIndex } from "./context.js";

export const move: ActionHandler = async (ctx) => {
  const nb = ctx.loaded.notebook;
  const index = targetIndex(ctx)!;
  const count = nb.cells.length;
  const to = ctx.params.to_index!;
  if (to < 0 || to > count - 1) {
    throw new ToolError(`Target index ${to} out of range (0-${count - 1}) in ${ctx.shownPath}`);
  }
  const cell = nb.cells[index];
  moveCell(nb, index, to);
  if (to !== index) await save(ctx);
  const what =
    to === index
      ? `Cell ${index} (${cellTag(cell)}) is already at position ${to}; nothing changed.`
      : `Moved cell ${index} (${cellTag(cell)}) to position ${to}. ${nowHas(ctx)}`;
  return ok(what, {
    ...ctx.details,
    cellIndex: index,
    cellId: cell.id as string | undefined,
    cellType: cell.cell_type,
    toIndex: to,
    totalCells: count,
    cellSource: cellSource(cell),
  });
};
