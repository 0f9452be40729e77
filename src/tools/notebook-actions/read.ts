/** read: a page of cells with short output summaries, or one cell with its saved outputs whole. */
import { invalidReadLines, problemLine } from "../notebook-problems.js";
import { renderRead } from "../notebook-read.js";
import { type ActionHandler, ok, ToolError, targetIndex } from "./context.js";

export const read: ActionHandler = async (ctx) => {
  const { params: p, loaded, shownPath } = ctx;
  const nb = loaded.notebook;
  const count = nb.cells.length;
  const index = targetIndex(ctx);
  const single = index !== undefined;
  const offset = single ? index : (p.offset ?? 0);
  if (offset < 0 || (offset > count - 1 && !(offset === 0 && count === 0))) {
    throw new ToolError(`Offset ${offset} out of range (0-${count - 1}) in ${shownPath}`);
  }
  const end = single ? offset + 1 : Math.min(count, offset + (p.limit ?? count));
  const check = ctx.check;
  const notices = check ? invalidReadLines(shownPath, check) : [];
  const view = renderRead(nb, shownPath, offset, end, ctx.readBudget, notices, single);
  return ok(view.text, {
    ...ctx.details,
    cellIndex: index,
    totalCells: count,
    cells: view.cells,
    nextOffset: view.nextOffset,
    warnings: check?.problems.length ? check.problems.map((x) => problemLine(x, check.schema)) : undefined,
    ...(single ? { cellType: nb.cells[index].cell_type, cellSource: view.cells[0]?.source } : {}),
  });
};
