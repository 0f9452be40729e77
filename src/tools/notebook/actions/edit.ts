/** edit: replaces a cell's source (and with cell_type, its type), then runs it with execute: true. */
import {
  type CellType,
  cellSource,
  changeCellTags,
  setCellSource,
  setCellType,
  thawCell,
} from "../../../notebook/index.js";
import {
  type ActionHandler,
  cellDetails,
  cellTag,
  nowHas,
  ok,
  save,
  sourceHead,
  targetIndex,
  thenRun,
} from "./context.js";
import { tagSummary } from "./tags.js";

export const edit: ActionHandler = async (ctx) => {
  const { params: p, loaded } = ctx;
  const index = targetIndex(ctx)!;
  const cell = thawCell(loaded.notebook, index);
  const before = cell.cell_type;
  const oldSource = cellSource(cell);
  const dropped = p.cell_type ? setCellType(cell, p.cell_type as CellType) : [];
  setCellSource(cell, p.content!);
  const tagged = p.tags ? changeCellTags(cell, { set: p.tags }) : undefined;
  await save(ctx);
  const changes = [
    ...(before !== cell.cell_type ? [`was ${before}`] : []),
    ...(dropped.length ? [`dropped ${dropped.join(" and ")}`] : []),
  ];
  const was = `${changes.length ? `; ${changes.join(", ")}` : ""}; old source ${sourceHead(oldSource)}`;
  const tagText = tagged ? ` Tags: ${tagSummary(tagged)}.` : "";
  const text = `Replaced cell ${index} (${cellTag(cell)}${was}).${tagText} ${nowHas(ctx)}`;
  const result = ok(text, cellDetails(ctx, index, cell, p.content));
  return thenRun(ctx, result, index);
};
