/** run: resolves the selected cells (one, a range, or all) and hands them to the executor. */

import type { ToolResult } from "../../types.js";
import type { NotebookDetails } from "../types.js";
import { type ActionHandler, ToolError, targetIndex } from "./context.js";

export const run: ActionHandler = async (ctx) => {
  const { params: p, loaded, shownPath } = ctx;
  const count = loaded.notebook.cells.length;
  const index = targetIndex(ctx);
  let start = index ?? 0;
  let stop = index === undefined ? count - 1 : index;
  if (p.cell_range) {
    [start, stop] = p.cell_range;
    if (start > count - 1 || stop > count - 1) {
      throw new ToolError(`cell_range [${start}, ${stop}] out of range (0-${count - 1}) in ${shownPath}`);
    }
  }
  if (p.to_index !== undefined) {
    if (p.to_index < start || p.to_index > count - 1) {
      throw new ToolError(`to_index ${p.to_index} out of range (${start}-${count - 1}) in ${shownPath}`);
    }
    stop = p.to_index;
  }
  const cellIndices: number[] = [];
  for (let i = start; i <= stop; i++) cellIndices.push(i);
  return ctx.executor!.run({
    path: loaded.path,
    ...(loaded.roots ? { roots: loaded.roots } : {}),
    shownPath,
    cellIndices,
    params: p,
    signal: ctx.signal,
    onUpdate: ctx.onUpdate,
  }) as Promise<ToolResult<NotebookDetails>>;
};
