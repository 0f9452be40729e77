/**
 * The notebook tool's views. Call: action, path, the cell (`cell:N` or `id:…`), type and run
 * options on one line. Result: the tool's summary, the cell's source highlighted (Python for code,
 * Markdown for markdown; a few lines collapsed, whole expanded), a page of cells for read, and for
 * run (or edit/insert with execute) the same cell view as the python tool. Error: results are
 * drawn as an error block naming the notebook.
 */

import { plural } from "../sys/units.js";
import { notebookDescriptor } from "../tools/notebook/descriptor.js";
import type { ReadCell } from "../tools/notebook/read.js";
import type { NotebookDetails } from "../tools/notebook/types.js";
import { isErrorText } from "../tools/types.js";
import { block, COLLAPSED, isObject, type RenderOptions } from "./format.js";
import { cellLanguage, highlightLines } from "./highlight.js";
import { isPythonDetails, pythonResultLines } from "./python-view.js";
import { cleanText, wrapLine } from "./width.js";

type Content = ReadonlyArray<{ type: string; text?: string; data?: string; mimeType?: string }>;

export function notebookCallLines(args: unknown, o: RenderOptions): string[] {
  const t = o.theme;
  const a = isObject(args) ? args : {};
  const parts = [t.bold(t.fg("toolTitle", notebookDescriptor.name))];
  if (typeof a.action === "string") parts.push(t.fg("accent", a.action));
  if (typeof a.notebook_path === "string") parts.push(a.notebook_path);
  if (typeof a.cell_id === "string") parts.push(t.fg("muted", `id:${a.cell_id}`));
  if (typeof a.cell_index === "number") {
    const to = typeof a.to_index === "number" && a.action === "run" ? `..${a.to_index}` : "";
    parts.push(t.fg("muted", `cell:${a.cell_index}${to}`));
  }
  if (Array.isArray(a.cell_range)) parts.push(t.fg("muted", `cells:${a.cell_range.join("..")}`));
  if (typeof a.to_index === "number" && a.action === "move") parts.push(t.fg("muted", `→ ${a.to_index}`));
  if (typeof a.cell_type === "string") parts.push(t.fg("dim", a.cell_type));
  if (a.all === true) parts.push(t.fg("dim", "all"));
  if (typeof a.offset === "number") parts.push(t.fg("dim", `offset ${a.offset}`));
  if (typeof a.limit === "number") parts.push(t.fg("dim", `limit ${a.limit}`));
  if (a.execute === true) parts.push(t.fg("dim", "+run"));
  if (a.allow_errors === true) parts.push(t.fg("dim", "allow_errors"));
  if (typeof a.timeout === "number") parts.push(t.fg("dim", `timeout ${a.timeout}s`));
  if (typeof a.wait === "number") parts.push(t.fg("dim", `wait ${a.wait}s`));
  return wrapLine(parts.join(" "), o.width);
}

/** An Error: result: a red-barred block with the message, and the notebook it was about. */
export function errorBlock(text: string, path: string | undefined, o: RenderOptions): string[] {
  const t = o.theme;
  const bar = t.fg("error", "┃ ");
  const lines = cleanText(text).split("\n");
  const out = block(
    lines.map((l, k) => (k === 0 ? t.fg("error", l) : l)),
    o,
    o.expanded ? Number.POSITIVE_INFINITY : COLLAPSED.output,
    { gutter: bar },
  );
  if (path) out.push(...block([t.fg("muted", path)], o, 1, { gutter: bar }));
  return out;
}

function sourceBlock(source: string, cellType: string | undefined, o: RenderOptions): string[] {
  const lines = highlightLines(source.replace(/\n$/, ""), cellLanguage(cellType), o.theme);
  if (lines.length === 1 && lines[0] === "") return [];
  return block(lines, o, COLLAPSED.code);
}

function readCellHeader(c: ReadCell, o: RenderOptions): string {
  const t = o.theme;
  const parts = [t.fg("accent", `cell ${c.index}`), t.fg("muted", c.cellType)];
  if (c.id) parts.push(t.fg("dim", `id ${c.id}`));
  if (c.cellType === "code") parts.push(t.fg("dim", `[${c.executionCount ?? " "}]`));
  return parts.join(t.fg("dim", " · "));
}

/** read of several cells: each cell's header and source, with its output summary lines. */
function readPageLines(cells: ReadCell[], d: NotebookDetails, o: RenderOptions): string[] {
  const t = o.theme;
  const out: string[] = [];
  const shown = o.expanded ? cells : cells.slice(0, COLLAPSED.cells);
  for (const c of shown) {
    out.push(...wrapLine(readCellHeader(c, o), o.width));
    const keep = o.expanded ? Number.POSITIVE_INFINITY : 2;
    const src = highlightLines(c.source.replace(/\n$/, ""), cellLanguage(c.cellType), t);
    if (!(src.length === 1 && src[0] === "")) out.push(...block(src, o, keep));
    const counts = c.outputs ? Object.entries(c.outputs.counts) : [];
    if (counts.length) {
      const what = counts.map(([k, v]) => `${v} ${k}`).join(", ");
      const lines = [
        t.fg("dim", `outputs: ${what}`),
        ...(o.expanded ? (c.outputs?.lines ?? []).map((l) => t.fg("muted", cleanText(l))) : []),
      ];
      out.push(...block(lines, o, Number.POSITIVE_INFINITY, { gutter: t.fg("border", "┆ ") }));
    }
    if (c.attachments)
      out.push(
        ...block([t.fg("dim", `attachments: ${c.attachments.join(", ")}`)], o, 1, {
          gutter: t.fg("border", "┆ "),
        }),
      );
  }
  if (shown.length < cells.length)
    out.push(t.fg("dim", `… ${plural(cells.length - shown.length, "more cell")} (expand to see)`));
  if (d.nextOffset !== undefined) out.push(t.fg("dim", `more cells from offset ${d.nextOffset}`));
  return out;
}

export function notebookResultLines(
  content: Content,
  details: unknown,
  isError: boolean,
  o: RenderOptions,
): string[] {
  const t = o.theme;
  const texts = content.filter((c) => c.type === "text").map((c) => c.text ?? "");
  const text = texts.join("\n");
  const d = (isObject(details) ? details : {}) as NotebookDetails & Record<string, unknown>;
  const path = typeof d.notebookPath === "string" ? d.notebookPath : undefined;
  // a run answers as the python tool does
  if (isPythonDetails(details)) {
    if (isError && isErrorText(text) && !details.cells.some((c) => c.output))
      return errorBlock(text, path, o);
    return pythonResultLines(text, details, content, o, true);
  }
  if (isError) return errorBlock(text, path, o);
  const out: string[] = [];
  const summary = cleanText(texts[0] ?? "").split("\n");
  const first = summary[0] ?? "";
  if (d.action === "read" && Array.isArray(d.cells) && d.cellIndex === undefined) {
    const head = `${first}${summary.length > 1 ? "" : ""}`;
    out.push(...wrapLine(`${t.fg("success", "✓")} ${t.fg("muted", head)}`, o.width));
    out.push(...readPageLines(d.cells as ReadCell[], d, o));
  } else if (d.action === "read" && Array.isArray(d.cells)) {
    // one cell, outputs whole: the tool's text is the view
    const c = (d.cells as ReadCell[])[0];
    if (c) out.push(...wrapLine(readCellHeader(c, o), o.width));
    if (c) out.push(...sourceBlock(c.source, c.cellType, o));
    const outputsAt = summary.findIndex((l) => l.startsWith("-- outputs") || l.startsWith("-- attachments"));
    if (outputsAt >= 0) {
      out.push(
        ...block(
          summary.slice(outputsAt).map((l) => t.fg("muted", l)),
          o,
          COLLAPSED.output,
          { gutter: t.fg("border", "┆ ") },
        ),
      );
    }
  } else {
    out.push(...wrapLine(`${t.fg("success", "✓")} ${first}`, o.width));
    for (const l of summary.slice(1)) out.push(...wrapLine(t.fg("muted", l), o.width));
    if (typeof d.cellSource === "string") {
      const removed = d.action === "delete";
      if (removed) out.push(t.fg("dim", "removed source:"));
      out.push(...sourceBlock(d.cellSource, d.cellType, o));
    }
  }
  for (const w of d.warnings ?? []) out.push(...wrapLine(t.fg("warning", `⚠ ${cleanText(w)}`), o.width));
  if (isPythonDetails(d.run)) {
    const runText = texts.slice(1).join("\n");
    out.push(...pythonResultLines(runText, d.run, content, o, true));
  }
  return out;
}
