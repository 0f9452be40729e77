/**
 * Saving by splicing: when the file on disk is laid out exactly as nbformat.write lays out a
 * notebook around its cells, unchanged cells are written back as their original bytes and only
 * new or changed cells (and the frame, if metadata changed) are serialised. Cells loaded from disk
 * are deep-frozen, so "unchanged" is guaranteed, not guessed (see thawCell). The result is the same
 * bytes a full serialisation gives for canonical files — without re-encoding 20 MB.
 */
import type { JsonValue } from "./json.js";
import { type Cell, deepFreeze, type Notebook } from "./model.js";
import { serializeCell, serializeNotebook } from "./serialize.js";

const SEP = Buffer.from(",\n  ");
const MARK = "\u0000nbagent-cells-frame";
const MARK_JSON = JSON.stringify(MARK);

export interface Layout {
  /** The exact bytes of each frozen (unchanged since read) cell, as views into what was read/written. */
  cells: WeakMap<object, Buffer>;
  /** The bytes before the first cell and after the last one. */
  head: Buffer;
  tail: Buffer;
}

/** The layout of freshly read bytes, or undefined when they are not in nbformat.write's shape. */
export function layoutOf(
  bytes: Buffer,
  value: JsonValue,
  cellSpans?: [number, number][],
): Layout | undefined {
  const nb = value as Notebook;
  if (!cellSpans || cellSpans.length === 0 || cellSpans.length !== nb.cells.length) return undefined;
  for (let i = 1; i < cellSpans.length; i++) {
    const gap = bytes.subarray(cellSpans[i - 1][1], cellSpans[i][0]);
    if (!gap.equals(SEP)) return undefined;
  }
  const cells = new WeakMap<object, Buffer>();
  nb.cells.forEach((cell, i) => {
    deepFreeze(cell);
    cells.set(cell, bytes.subarray(cellSpans[i][0], cellSpans[i][1]));
  });
  return {
    cells,
    head: bytes.subarray(0, cellSpans[0][0]),
    tail: bytes.subarray(cellSpans[cellSpans.length - 1][1]),
  };
}

/** The frame nbformat.write puts around the cells, split at the cells: [head, tail]. */
function frame(nb: Notebook): [string, string] | undefined {
  const parts = serializeNotebook({ ...nb, cells: [MARK] }).split(MARK_JSON);
  return parts.length === 2 ? [parts[0], parts[1]] : undefined;
}

/**
 * The bytes to write for `nb` as a list of chunks (written with writev, never concatenated), and the
 * layout they will have on disk.
 */
export function render(nb: Notebook, previous?: Layout): { chunks: Buffer[]; layout?: Layout } {
  const cells = nb.cells;
  const parts = previous && cells.length > 0 ? frame(nb) : undefined;
  if (!previous || !parts) return { chunks: [Buffer.from(serializeNotebook(nb), "utf8")] };
  const [headText, tailText] = parts;
  // The original frame must be exactly nbformat's frame for the spliced file to be exactly nbformat's output.
  if (!previous.head.equals(Buffer.from(headText)) || !previous.tail.equals(Buffer.from(tailText))) {
    return { chunks: [Buffer.from(serializeNotebook(nb), "utf8")] };
  }
  const chunks: Buffer[] = [previous.head];
  const kept = new WeakMap<object, Buffer>();
  cells.forEach((cell: Cell, i) => {
    if (i > 0) chunks.push(SEP);
    const old = previous.cells.get(cell);
    chunks.push(old ?? Buffer.from(serializeCell(cell), "utf8"));
    if (old) kept.set(cell, old);
  });
  chunks.push(previous.tail);
  return { chunks, layout: { cells: kept, head: previous.head, tail: previous.tail } };
}
