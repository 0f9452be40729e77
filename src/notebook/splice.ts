/**
 * Saving by splicing: unchanged cells are written back as their original bytes and only new or
 * changed cells (and the frame around the cells, if its values changed) are serialised, in the
 * file's own style (indentation, line endings, final newline; see layout.ts). Cells loaded from disk
 * are deep-frozen, so "unchanged" is guaranteed, not guessed (see thawCell). For files written by
 * nbformat.write the result is the same bytes a full serialisation gives — without re-encoding 20 MB;
 * for other layouts an edit changes only the edited cell's lines.
 */
import { type JsonValue, parseJson, RawNumber } from "./json.js";
import { detectStyle } from "./layout.js";
import { type Cell, deepFreeze, type Notebook } from "./model.js";
import { type JsonStyle, NBFORMAT_STYLE, serializeCell, serializeNotebook } from "./serialize.js";

const MARK = "\u0000nbagent-cells-frame";
const MARK_JSON = JSON.stringify(MARK);

export interface Layout {
  /** The file's whitespace, kept on every save. */
  style: JsonStyle;
  /** The exact bytes of each frozen (unchanged since read) cell, as views into what was read/written. */
  cells?: WeakMap<object, Buffer>;
  /** The bytes before the first cell and after the last one. */
  head?: Buffer;
  tail?: Buffer;
}

/** What separates two cells in a file of this style. */
function cellSeparator(style: JsonStyle): Buffer {
  if (style.indent === null) return Buffer.from(style.itemSep);
  return Buffer.from(`,${style.eol}${style.indent}${style.indent}`);
}

/** The layout of freshly read bytes: their style and, when the cells are evenly laid out, their bytes. */
export function layoutOf(bytes: Buffer, value: JsonValue, cellSpans?: [number, number][]): Layout {
  const nb = value as Notebook;
  const style = detectStyle(bytes, cellSpans) ?? NBFORMAT_STYLE;
  if (!cellSpans || cellSpans.length === 0 || cellSpans.length !== nb.cells.length) return { style };
  const sep = cellSeparator(style);
  for (let i = 1; i < cellSpans.length; i++) {
    const gap = bytes.subarray(cellSpans[i - 1][1], cellSpans[i][0]);
    if (!gap.equals(sep)) return { style };
  }
  const cells = new WeakMap<object, Buffer>();
  nb.cells.forEach((cell, i) => {
    deepFreeze(cell);
    cells.set(cell, bytes.subarray(cellSpans[i][0], cellSpans[i][1]));
  });
  return {
    style,
    cells,
    head: bytes.subarray(0, cellSpans[0][0]),
    tail: bytes.subarray(cellSpans[cellSpans.length - 1][1]),
  };
}

/** The frame in this style around the cells, split at the cells: [head, tail]. */
function frame(nb: Notebook, style: JsonStyle): [string, string] | undefined {
  const parts = serializeNotebook({ ...nb, cells: [MARK] }, style).split(MARK_JSON);
  return parts.length === 2 ? [parts[0], parts[1]] : undefined;
}

/** Deep equality of parsed JSON values (object key order ignored; RawNumbers by their text). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof RawNumber || b instanceof RawNumber) {
    return a instanceof RawNumber && b instanceof RawNumber && a.text === b.text;
  }
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => sameJson(x, bb[i]));
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) =>
      Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** Whether everything but the cells still has the values the original head/tail bytes hold. */
function frameUnchanged(nb: Notebook, head: Buffer, tail: Buffer): boolean {
  let before: Record<string, unknown>;
  try {
    before = parseJson(head.toString("utf8") + tail.toString("utf8")) as Record<string, unknown>;
  } catch {
    return false;
  }
  return sameJson({ ...before, cells: null }, { ...nb, cells: null });
}

/**
 * The bytes to write for `nb` as a list of chunks (written with writev, never concatenated), and the
 * layout they will have on disk.
 */
export function render(nb: Notebook, previous?: Layout): { chunks: Buffer[]; layout: Layout } {
  const style = previous?.style ?? NBFORMAT_STYLE;
  const cells = nb.cells;
  const parts = previous?.cells && cells.length > 0 ? frame(nb, style) : undefined;
  if (!previous?.cells || !previous.head || !previous.tail || !parts) {
    return { chunks: [Buffer.from(serializeNotebook(nb, style), "utf8")], layout: { style } };
  }
  let head: Buffer = Buffer.from(parts[0]);
  let tail: Buffer = Buffer.from(parts[1]);
  // The original frame bytes stay when they hold the same values (whatever their key order).
  if (
    (head.equals(previous.head) && tail.equals(previous.tail)) ||
    frameUnchanged(nb, previous.head, previous.tail)
  ) {
    head = previous.head;
    tail = previous.tail;
  }
  const sep = cellSeparator(style);
  const chunks: Buffer[] = [head];
  const kept = new WeakMap<object, Buffer>();
  cells.forEach((cell: Cell, i) => {
    if (i > 0) chunks.push(sep);
    const old = previous.cells?.get(cell);
    chunks.push(old ?? Buffer.from(serializeCell(cell, style), "utf8"));
    if (old) kept.set(cell, old);
  });
  chunks.push(tail);
  return { chunks, layout: { style, cells: kept, head, tail } };
}
