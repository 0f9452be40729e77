/**
 * The `read` action's view of a notebook: each cell's index, id, type and source, plus a short,
 * bounded summary of its outputs (counts, first lines of text, `[image/png 640x480]` markers).
 */
import { type Cell, cellSource, formatVersion, joinLines, type Notebook } from "../notebook/index.js";

export interface OutputSummary {
  counts: Record<string, number>;
  lines: string[];
}

export interface ReadCell {
  index: number;
  id?: string;
  cellType: string;
  source: string;
  executionCount?: number | null;
  outputs?: OutputSummary;
  /** Attachment names with their mime types, e.g. `a.png (image/png)`. */
  attachments?: string[];
}

const MAX_LINE = 200;
const LINES_PER_OUTPUT = 3;
const OUTPUTS_SHOWN = 6;

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-Z\\-_]/g;

function clip(line: string): string {
  const clean = line.replace(ANSI, "").replace(/\r?\n$/, "");
  return clean.length > MAX_LINE ? `${clean.slice(0, MAX_LINE)}…` : clean;
}

function firstLines(text: string, prefix: string): string[] {
  const lines = text.replace(ANSI, "").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const shown = lines.slice(0, LINES_PER_OUTPUT).map((l) => prefix + clip(l));
  if (lines.length > LINES_PER_OUTPUT)
    shown.push(`${prefix}… (${lines.length - LINES_PER_OUTPUT} more lines)`);
  return shown;
}

/** Width × height from the first bytes of a base64 PNG, JPEG or GIF; undefined when unknown. */
export function imageSize(mime: string, base64: string): { width: number; height: number } | undefined {
  const b64 = base64.slice(0, mime === "image/jpeg" ? 400_000 : 64).replace(/\s+/g, "");
  const buf = Buffer.from(b64.slice(0, b64.length - (b64.length % 4)), "base64");
  if (mime === "image/png" && buf.length >= 24 && buf.toString("latin1", 12, 16) === "IHDR") {
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (mime === "image/gif" && buf.length >= 10 && buf.toString("latin1", 0, 3) === "GIF") {
    return { width: buf.readUInt16LE(6), height: buf.readUInt16LE(8) };
  }
  if (mime === "image/jpeg" && buf[0] === 0xff && buf[1] === 0xd8) {
    let i = 2;
    while (i + 9 < buf.length) {
      if (buf[i] !== 0xff) return undefined;
      const marker = buf[i + 1];
      if (marker === 0xff) {
        i++;
        continue;
      }
      const len = buf.readUInt16BE(i + 2);
      const isFrame =
        marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isFrame) return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
      i += 2 + len;
    }
  }
  return undefined;
}

const TEXT_PREFERENCE = ["text/plain", "text/markdown", "text/latex"];

function summariseBundle(data: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const mimes = Object.keys(data);
  for (const mime of mimes) {
    if (!mime.startsWith("image/")) continue;
    const size = typeof data[mime] === "string" ? imageSize(mime, data[mime] as string) : undefined;
    lines.push(size ? `[${mime} ${size.width}x${size.height}]` : `[${mime}]`);
  }
  const textMime = TEXT_PREFERENCE.find((m) => m in data);
  if (textMime) lines.push(...firstLines(joinLines(data[textMime]), ""));
  const others = mimes.filter((m) => !m.startsWith("image/") && m !== textMime);
  if (others.length > 0) lines.push(`[also: ${others.join(", ")}]`);
  return lines;
}

export function summariseOutputs(outputs: unknown[]): OutputSummary {
  const counts: Record<string, number> = {};
  const lines: string[] = [];
  outputs.forEach((raw, i) => {
    const out = (raw ?? {}) as Record<string, unknown>;
    const type = typeof out.output_type === "string" ? out.output_type : "unknown";
    counts[type] = (counts[type] ?? 0) + 1;
    if (i >= OUTPUTS_SHOWN) return;
    if (type === "stream")
      lines.push(...firstLines(joinLines(out.text), `${String(out.name ?? "stream")}: `));
    else if (type === "error") lines.push(clip(`${String(out.ename)}: ${String(out.evalue)}`));
    else if (out.data && typeof out.data === "object")
      lines.push(...summariseBundle(out.data as Record<string, unknown>));
  });
  if (outputs.length > OUTPUTS_SHOWN) lines.push(`… ${outputs.length - OUTPUTS_SHOWN} more outputs`);
  return { counts, lines };
}

export function readCell(cell: Cell, index: number): ReadCell {
  const entry: ReadCell = { index, cellType: cell.cell_type, source: cellSource(cell) };
  if (typeof cell.id === "string") entry.id = cell.id;
  const att = cell.attachments;
  if (att && typeof att === "object" && !Array.isArray(att) && Object.keys(att).length > 0) {
    entry.attachments = Object.entries(att).map(([name, bundle]) => {
      const mimes = bundle && typeof bundle === "object" ? Object.keys(bundle) : [];
      return `${name} (${mimes.join(", ")})`;
    });
  }
  if (cell.cell_type === "code") {
    entry.executionCount = typeof cell.execution_count === "number" ? cell.execution_count : null;
    entry.outputs = summariseOutputs(Array.isArray(cell.outputs) ? cell.outputs : []);
  }
  return entry;
}

function header(c: ReadCell): string {
  const parts = [`cell ${c.index}`, c.cellType];
  if (c.id !== undefined) parts.push(`id ${c.id}`);
  if (c.cellType === "code") parts.push(`execution_count ${c.executionCount ?? "-"}`);
  return `## ${parts.join(" · ")}`;
}

function outputBlock(c: ReadCell): string[] {
  if (c.attachments) return [`-- attachments: ${c.attachments.join(", ")}`];
  if (!c.outputs) return [];
  const total = Object.values(c.outputs.counts).reduce((a, b) => a + b, 0);
  if (total === 0) return [];
  const counts = Object.entries(c.outputs.counts)
    .map(([t, n]) => `${n} ${t}`)
    .join(", ");
  return [`-- outputs (${counts})`, ...c.outputs.lines.map((l) => `   ${l}`)];
}

export interface ReadView {
  text: string;
  cells: ReadCell[];
  /** Index of the first cell not shown, when the view stopped early. */
  nextOffset?: number;
}

/** Renders cells [start, end) within `budget` characters (always at least one cell). */
export function renderRead(
  nb: Notebook,
  shownPath: string,
  start: number,
  end: number,
  budget: number,
  warnings: string[],
): ReadView {
  const [major, minor] = formatVersion(nb);
  const lang = (nb.metadata as Record<string, { name?: unknown }> | undefined)?.language_info?.name;
  const total = nb.cells.length;
  const head = [
    `${shownPath}: ${total} cell${total === 1 ? "" : "s"}, nbformat ${major}.${minor}${typeof lang === "string" ? `, ${lang}` : ""}`,
  ];
  for (const w of warnings) head.push(`warning: ${w}`);
  let text = head.join("\n");
  const cells: ReadCell[] = [];
  let i = start;
  for (; i < end; i++) {
    const c = readCell(nb.cells[i], i);
    const maxSource = Math.max(2_000, budget - text.length - 500);
    let source = c.source;
    if (source.length > maxSource) {
      source = `${source.slice(0, maxSource)}\n[… ${source.length - maxSource} more characters; read cell ${i} alone to see all]`;
    }
    const block = ["", "", header(c), source, ...outputBlock(c)].join("\n");
    if (cells.length > 0 && text.length + block.length > budget) break;
    text += block;
    cells.push(c);
  }
  const shownEnd = start + cells.length;
  if (i < end) {
    text += `\n\n[Showing cells ${start}-${shownEnd - 1} of ${total}. Use offset=${shownEnd} to continue.]`;
    return { text, cells, nextOffset: shownEnd };
  }
  return { text, cells };
}
