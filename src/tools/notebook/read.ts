/**
 * The `read` action's view of a notebook: each cell's index, id, type and source, plus its outputs —
 * a short, bounded summary per output when several cells are shown, every output whole (within the
 * read budget) when one cell is asked for (notebook/outputs.ts; docs/notebook-tool.md).
 */
import { type Cell, cellSource, cellTags, formatVersion, type Notebook } from "../../notebook/index.js";
import { pluralBare } from "../../sys/units.js";
import {
  type OutputSummary,
  type ReadImageRef,
  ReadImages,
  summariseOutputs,
  wholeOutputs,
} from "./outputs.js";

export type { OutputSummary, ReadImageRef } from "./outputs.js";
export { imageSize, summariseOutputs } from "./outputs.js";

export interface ReadCell {
  index: number;
  id?: string;
  cellType: string;
  source: string;
  executionCount?: number | null;
  outputs?: OutputSummary;
  /** Attachment names with their mime types, e.g. `a.png (image/png)`. */
  attachments?: string[];
  /** The cell's metadata tags (skip-execution, raises-exception, …), when it has any. */
  tags?: string[];
}

export function readCell(cell: Cell, index: number, images?: ReadImages): ReadCell {
  const entry: ReadCell = { index, cellType: cell.cell_type, source: cellSource(cell) };
  if (typeof cell.id === "string") entry.id = cell.id;
  const tags = cellTags(cell);
  if (tags.length) entry.tags = tags;
  const att = cell.attachments;
  if (att && typeof att === "object" && !Array.isArray(att) && Object.keys(att).length > 0) {
    entry.attachments = Object.entries(att).map(([name, bundle]) => {
      const mimes = bundle && typeof bundle === "object" ? Object.keys(bundle) : [];
      return `${name} (${mimes.join(", ")})`;
    });
  }
  if (cell.cell_type === "code") {
    entry.executionCount = typeof cell.execution_count === "number" ? cell.execution_count : null;
    entry.outputs = summariseOutputs(Array.isArray(cell.outputs) ? cell.outputs : [], images, index);
  }
  return entry;
}

function header(c: ReadCell): string {
  const parts = [`cell ${c.index}`, c.cellType];
  if (c.id !== undefined) parts.push(`id ${c.id}`);
  if (c.cellType === "code") parts.push(`execution_count ${c.executionCount ?? "-"}`);
  if (c.tags) parts.push(`tags ${c.tags.join(", ")}`);
  return `## ${parts.join(" · ")}`;
}

function countsLine(c: ReadCell): string | undefined {
  if (!c.outputs) return undefined;
  const entries = Object.entries(c.outputs.counts);
  if (entries.length === 0) return undefined;
  return `-- outputs (${entries.map(([t, n]) => `${n} ${t}`).join(", ")})`;
}

function summaryBlock(c: ReadCell): string[] {
  if (c.attachments) return [`-- attachments: ${c.attachments.join(", ")}`];
  const counts = countsLine(c);
  if (!counts || !c.outputs) return [];
  return [counts, ...c.outputs.lines.map((l) => `   ${l}`)];
}

export interface ReadView {
  text: string;
  cells: ReadCell[];
  /** Index of the first cell not shown, when the view stopped early. */
  nextOffset?: number;
  /** The saved images the text names, in document order; `text` holds each one's placeholder. */
  images: ReadImageRef[];
}

/**
 * Renders cells [start, end) within `budget` characters (always at least one cell). With `single`,
 * the one cell's source may use four budgets and its outputs are shown whole within one budget.
 */
export function renderRead(
  nb: Notebook,
  shownPath: string,
  start: number,
  end: number,
  budget: number,
  /** Lines shown under the header (an invalid notebook's findings). */
  notices: string[],
  single = false,
): ReadView {
  const [major, minor] = formatVersion(nb);
  const lang = (nb.metadata as Record<string, { name?: unknown }> | undefined)?.language_info?.name;
  const total = nb.cells.length;
  const head = [
    `${shownPath}: ${pluralBare(total, "cell")}, nbformat ${major}.${minor}${typeof lang === "string" ? `, ${lang}` : ""}`,
  ];
  head.push(...notices);
  let text = head.join("\n");
  const cells: ReadCell[] = [];
  const sourceBudget = single ? budget * 4 : budget;
  let shortened = false;
  const images: ReadImageRef[] = [];
  let tokens = 0;
  let i = start;
  for (; i < end; i++) {
    const cell = nb.cells[i];
    const cellImages = new ReadImages(tokens);
    const c = readCell(cell, i, single ? undefined : cellImages);
    const maxSource = Math.max(2_000, sourceBudget - text.length - 500);
    let source = c.source;
    if (source.length > maxSource) {
      source = `${source.slice(0, maxSource)}\n[… ${source.length - maxSource} more characters; read cell ${i} alone to see all]`;
    }
    let outputs = summaryBlock(c);
    if (single && c.outputs && !c.attachments) {
      const counts = countsLine(c);
      const raw = Array.isArray(cell.outputs) ? cell.outputs : [];
      outputs = counts ? [counts, ...wholeOutputs(raw, i, budget, cellImages)] : [];
    }
    tokens += cellImages.refs.length;
    const block = ["", "", header(c), source, ...outputs].join("\n");
    if (cells.length > 0 && text.length + block.length > budget) break;
    text += block;
    cells.push(c);
    images.push(...cellImages.refs.filter((r) => block.includes(r.token)));
    if (!single && c.outputs?.shortened) shortened = true;
  }
  const shownEnd = start + cells.length;
  const notes: string[] = [];
  if (shortened) {
    notes.push("Outputs are summarised; read one cell (cell_index or cell_id) to see its outputs whole.");
  }
  let nextOffset: number | undefined;
  if (i < end) {
    notes.push(`Showing cells ${start}-${shownEnd - 1} of ${total}. Use offset=${shownEnd} to continue.`);
    nextOffset = shownEnd;
  }
  if (notes.length) text += `\n\n[${notes.join(" ")}]`;
  return nextOffset === undefined ? { text, cells, images } : { text, cells, nextOffset, images };
}
