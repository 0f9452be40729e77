/**
 * The in-memory notebook: nbformat 4.x JSON as parsed (numbers kept verbatim, unknown fields kept),
 * plus the few operations nbagent performs on it. No kernel knowledge lives here.
 */
import { randomBytes } from "../sys/crypto.js";
import { pluralBare } from "../sys/units.js";
import type { JsonObject, JsonValue } from "./json.js";
import { RawNumber } from "./json.js";
import { joinLines, splitLines } from "./lines.js";
import { keepKeyOrder } from "./serialize.js";

export type CellType = "code" | "markdown" | "raw";

export interface Cell extends JsonObject {
  cell_type: string;
  source: string | string[];
  metadata: JsonObject;
}

export interface Notebook extends JsonObject {
  cells: Cell[];
}

/** nbformat's cell id rule (nbformat >= 4.5). */
export const CELL_ID_PATTERN = /^[a-zA-Z0-9-_]{1,64}$/;

/** Thrown for a notebook whose JSON is not an nbformat 4 notebook we can edit safely. */
export class NotebookStructureError extends Error {}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof RawNumber);
}

function intOf(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (v instanceof RawNumber) return Number(v.text);
  return undefined;
}

/** `[major, minor]`; a file without the fields counts as 4.0 (minimal hand-written notebooks). */
export function formatVersion(nb: Notebook): [number, number] {
  return [intOf(nb.nbformat) ?? 4, intOf(nb.nbformat_minor) ?? 0];
}

/** Cells carry ids from nbformat 4.5 on. */
export function supportsCellIds(nb: Notebook): boolean {
  const [major, minor] = formatVersion(nb);
  return major > 4 || (major === 4 && minor >= 5);
}

/** Whether a loaded cell's `key` is still bytes behind a getter (see decode.ts): reading it parses it. */
export function isDeferred(cell: object, key: string): boolean {
  return typeof Object.getOwnPropertyDescriptor(cell, key)?.get === "function";
}

/** Checks the shape nbagent relies on; throws NotebookStructureError with a reason. */
export function assertNotebook(value: JsonValue): asserts value is Notebook {
  if (!isObject(value) || !Array.isArray(value.cells)) {
    throw new NotebookStructureError("missing cells array");
  }
  const major = intOf(value.nbformat);
  if (value.nbformat !== undefined && major !== 4) {
    throw new NotebookStructureError(`nbformat ${JSON.stringify(value.nbformat)} is not supported, only 4`);
  }
  if (value.metadata !== undefined && !isObject(value.metadata)) {
    throw new NotebookStructureError("metadata is not an object");
  }
  value.cells.forEach((cell, i) => {
    if (!isObject(cell)) throw new NotebookStructureError(`cell ${i} is not an object`);
    if (typeof cell.cell_type !== "string") throw new NotebookStructureError(`cell ${i} has no cell_type`);
    const src = cell.source;
    if (!(typeof src === "string" || (Array.isArray(src) && src.every((s) => typeof s === "string")))) {
      throw new NotebookStructureError(`cell ${i} source is not a string or list of strings`);
    }
    if (cell.metadata !== undefined && !isObject(cell.metadata)) {
      throw new NotebookStructureError(`cell ${i} metadata is not an object`);
    }
    // Deferred outputs were checked by the byte scan and are parsed only when read (decode.ts).
    if (!isDeferred(cell, "outputs")) {
      if (cell.outputs !== undefined && !Array.isArray(cell.outputs)) {
        throw new NotebookStructureError(`cell ${i} outputs is not a list`);
      }
      if (Array.isArray(cell.outputs) && !cell.outputs.every(isObject)) {
        throw new NotebookStructureError(`cell ${i} has an output that is not an object`);
      }
    }
    if (cell.id !== undefined && typeof cell.id !== "string") {
      throw new NotebookStructureError(`cell ${i} id is not a string`);
    }
  });
}

/** A fresh id (8 hex digits, like nbformat's `uuid4().hex[:8]`) not used by any cell of the notebook. */
export function newCellId(nb: Notebook): string {
  const used = new Set(nb.cells.map((c) => c.id));
  for (;;) {
    const id = randomBytes(4).toString("hex");
    if (!used.has(id)) return id;
  }
}

/**
 * Cells loaded from a file are deep-frozen so a save can reuse their original bytes (nothing can
 * have changed them). Change a cell only through `thawCell`, which swaps in a mutable copy.
 */
export function deepFreeze(v: unknown): void {
  if (v === null || typeof v !== "object" || Object.isFrozen(v)) return;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === "object") deepFreeze(x);
    }
  } else if (!(v instanceof RawNumber)) {
    for (const k in v) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== null && typeof x === "object") deepFreeze(x);
    }
  }
  Object.freeze(v);
}

function thaw<T>(v: T): T {
  if (v === null || typeof v !== "object" || v instanceof RawNumber) return v;
  if (Array.isArray(v)) return v.map(thaw) as T;
  const out: Record<string, unknown> = {};
  const keys = Object.keys(v);
  for (const k of keys) out[k] = thaw((v as Record<string, unknown>)[k]);
  keepKeyOrder(out, keys);
  return out as T;
}

/** The cell at `index`, made mutable (a deep copy replaces a frozen, as-loaded cell). */
export function thawCell(nb: Notebook, index: number): Cell {
  const cell = nb.cells[index];
  if (!Object.isFrozen(cell)) return cell;
  const copy = thaw(cell);
  nb.cells[index] = copy;
  return copy;
}

/** A cell whose id another cell above it already had, and the fresh id it was given. */
export interface RepairedCellId {
  index: number;
  was: string;
  now: string;
}

/**
 * Gives each cell whose id an earlier cell already has a fresh id, as nbformat does when it reads a
 * notebook (the first cell keeps it); returns what changed, in cell order. Ids identify cells to a
 * run and to edits, so a notebook with shared ids cannot be run cell by cell without this
 * (docs/notebook-tool.md, "Duplicate cell ids").
 */
export function repairDuplicateIds(nb: Notebook): RepairedCellId[] {
  const seen = new Set<string>();
  const repaired: RepairedCellId[] = [];
  nb.cells.forEach((cell, index) => {
    if (typeof cell.id !== "string") return;
    if (!seen.has(cell.id)) {
      seen.add(cell.id);
      return;
    }
    const now = newCellId(nb);
    repaired.push({ index, was: cell.id, now });
    thawCell(nb, index).id = now;
    seen.add(now);
  });
  return repaired;
}

/** Index of the cell with this id, or -1. */
export function findCellById(nb: Notebook, id: string): number {
  return nb.cells.findIndex((c) => c.id === id);
}

/** A new cell as nbformat creates it; the id only when the notebook's version has ids. */
export function createCell(nb: Notebook, cellType: CellType, source: string): Cell {
  const cell: Cell = { cell_type: cellType, metadata: {}, source: splitLines(source) };
  if (cellType === "code") {
    cell.execution_count = null;
    cell.outputs = [];
  }
  if (supportsCellIds(nb)) cell.id = newCellId(nb);
  return cell;
}

/** Replaces a cell's source (stored as nbformat's line list). */
export function setCellSource(cell: Cell, source: string): void {
  cell.source = splitLines(source);
}

export function cellSource(cell: Cell): string {
  return joinLines(cell.source);
}

/**
 * Changes a cell's type, keeping id, metadata and source. To code: empty outputs and a null
 * execution_count. Away from code: outputs and execution_count go. Attachments exist only on
 * markdown/raw cells, so a code cell drops them. Returns what was dropped, for the result text.
 */
export function setCellType(cell: Cell, cellType: CellType): string[] {
  const dropped: string[] = [];
  if (cell.cell_type === cellType) return dropped;
  if (cellType === "code") {
    if (cell.attachments !== undefined) {
      const n = isObject(cell.attachments) ? Object.keys(cell.attachments).length : 0;
      if (n > 0) dropped.push(`${pluralBare(n, "attachment")}`);
      delete cell.attachments;
    }
    cell.execution_count = null;
    cell.outputs = [];
  } else {
    const outputs = Array.isArray(cell.outputs) ? cell.outputs.length : 0;
    if (outputs > 0) dropped.push(`${pluralBare(outputs, "output")}`);
    const count = cell.execution_count;
    if (count !== undefined && count !== null) dropped.push(`execution count ${String(count)}`);
    delete cell.outputs;
    delete cell.execution_count;
  }
  cell.cell_type = cellType;
  return dropped;
}

/** A cell's metadata tags (nbformat: metadata.tags, a list of strings); [] when it has none. */
export function cellTags(cell: Cell): string[] {
  const meta = cell.metadata;
  const tags = isObject(meta) ? meta.tags : undefined;
  return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === "string") : [];
}

export interface TagChange {
  added: string[];
  removed: string[];
  tags: string[];
}

/**
 * Changes a (thawed) cell's tags: `set` replaces the whole list, then `add` appends the tags it
 * lacks (in the order given) and `remove` drops those it has; the existing order is kept and
 * duplicates go. An empty list removes metadata.tags (nbformat's own notebooks carry none).
 */
export function changeCellTags(
  cell: Cell,
  change: { set?: readonly string[]; add?: readonly string[]; remove?: readonly string[] },
): TagChange {
  const before = cellTags(cell);
  let tags = change.set ? [...change.set] : [...before];
  for (const t of change.add ?? []) if (!tags.includes(t)) tags.push(t);
  tags = tags.filter((t, i) => !(change.remove ?? []).includes(t) && tags.indexOf(t) === i);
  const added = tags.filter((t) => !before.includes(t));
  const removed = before.filter((t) => !tags.includes(t));
  if (added.length || removed.length || tags.join("\0") !== before.join("\0")) {
    const meta: JsonObject = isObject(cell.metadata) ? cell.metadata : {};
    if (tags.length) meta.tags = tags;
    else delete meta.tags;
    cell.metadata = meta;
  }
  return { added, removed, tags };
}

/** Empties a code cell's outputs and execution count; true when something changed. */
export function clearCellOutputs(cell: Cell): boolean {
  if (cell.cell_type !== "code") return false;
  const had =
    (Array.isArray(cell.outputs) && cell.outputs.length > 0) || (cell.execution_count ?? null) !== null;
  if (!had) return false;
  cell.outputs = [];
  cell.execution_count = null;
  return true;
}

/** Moves cell `from` so that it ends up at index `to` (both within 0..count-1). */
export function moveCell(nb: Notebook, from: number, to: number): void {
  const [cell] = nb.cells.splice(from, 1);
  nb.cells.splice(to, 0, cell);
}

/**
 * Upgrades a 4.0–4.4 notebook to 4.5: every cell gets an id and the minor version becomes 5, in
 * one step (never half-way). Existing valid, unique ids are kept.
 */
export function upgradeToCellIds(nb: Notebook): void {
  if (supportsCellIds(nb)) return;
  const seen = new Set<string>();
  const fresh: number[] = [];
  nb.cells.forEach((cell, i) => {
    if (typeof cell.id === "string" && CELL_ID_PATTERN.test(cell.id) && !seen.has(cell.id)) seen.add(cell.id);
    else fresh.push(i);
  });
  for (const index of fresh) {
    const cell = thawCell(nb, index);
    let id: string;
    do id = randomBytes(4).toString("hex");
    while (seen.has(id));
    seen.add(id);
    cell.id = id;
  }
  nb.nbformat = 4;
  nb.nbformat_minor = 5;
}
