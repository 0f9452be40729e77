/** clear_outputs: empties the outputs and execution count of one code cell, or of every cell. */
import { clearCellOutputs, thawCell } from "../../../notebook/index.js";
import { pluralBare } from "../../../sys/units.js";
import { type ActionHandler, cellTag, ok, save, targetIndex } from "./context.js";

export const clearOutputs: ActionHandler = async (ctx) => {
  const nb = ctx.loaded.notebook;
  const index = targetIndex(ctx);
  const targets = index === undefined ? nb.cells.map((_, i) => i) : [index];
  const hasOutputs = (i: number) => {
    const c = nb.cells[i];
    return (
      c.cell_type === "code" &&
      ((Array.isArray(c.outputs) && c.outputs.length > 0) || c.execution_count != null)
    );
  };
  const cleared = targets.filter((i) => hasOutputs(i) && clearCellOutputs(thawCell(nb, i))).length;
  if (cleared > 0) await save(ctx);
  let text: string;
  if (index !== undefined) {
    const cell = nb.cells[index];
    text = cleared
      ? `Cleared the outputs and execution count of cell ${index} (${cellTag(cell)}).`
      : `Cell ${index} (${cellTag(cell)}) has no outputs or execution count; nothing changed.`;
  } else {
    text = cleared
      ? `Cleared the outputs and execution counts of ${pluralBare(cleared, "cell")} (of ${nb.cells.length}).`
      : `No cell of ${ctx.shownPath} has outputs or an execution count; nothing changed.`;
  }
  return ok(text, {
    ...ctx.details,
    cellIndex: index,
    cellType: index === undefined ? undefined : nb.cells[index].cell_type,
    totalCells: nb.cells.length,
    clearedCells: cleared,
  });
};
