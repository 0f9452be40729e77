/**
 * Notebook bytes → JSON value, parsing as little as a load needs. The byte scan (scan.ts) has
 * already checked the whole file is JSON; when it also located every cell and their bulky fields,
 * each cell is parsed without its outputs/attachments, which stay as bytes behind a getter that
 * parses them (losslessly, frozen) on first read. An edit of one cell in a 20 MB notebook then never
 * decodes the other cells' outputs, and a save writes those cells back as their original bytes
 * (splice.ts). Anything else — no cells array, odd bulk fields — is parsed whole.
 */
import { type JsonObject, type JsonValue, parseJson } from "./json.js";
import { deepFreeze } from "./model.js";
import { type BulkField, type CellSpan, scanJsonBytes } from "./scan.js";

export interface DecodedJson {
  value: JsonValue;
  /** Byte spans [start, end) of the top-level "cells" array's objects, when they could be located. */
  cellSpans?: [number, number][];
  /** NaN / Infinity tokens in the file (see scan.ts). */
  nonFinite: number;
}

/** Decodes UTF-8 JSON bytes (already checked to be UTF-8). Throws SyntaxError for anything not JSON. */
export function decodeJson(buf: Buffer): DecodedJson {
  const scanned = scanJsonBytes(buf);
  const cells = scanned.cells;
  const cellSpans = cells?.map((c): [number, number] => [c.start, c.end]);
  if (!cells || cells.length === 0 || !scanned.bulkOk) {
    return { value: parseJson(buf.toString("utf8")), cellSpans, nonFinite: scanned.nonFinite };
  }
  const frame = buf.toString("utf8", 0, cells[0].start) + buf.toString("utf8", cells[cells.length - 1].end);
  const value = parseJson(frame) as JsonObject;
  value.cells = cells.map((span) => deferredCell(buf, span));
  return { value, cellSpans, nonFinite: scanned.nonFinite };
}

/** The cell parsed without its bulk fields, which become getters over their bytes; frozen. */
function deferredCell(buf: Buffer, span: CellSpan): JsonObject {
  if (span.bulk.length === 0) {
    const cell = parseJson(buf.toString("utf8", span.start, span.end)) as JsonObject;
    deepFreeze(cell);
    return cell;
  }
  let text = "";
  let at = span.start;
  for (const field of span.bulk) {
    text += buf.toString("utf8", at, field.start) + (field.key === "outputs" ? "[]" : "{}");
    at = field.end;
  }
  text += buf.toString("utf8", at, span.end);
  const parsed = parseJson(text) as JsonObject;
  // A fresh object with the keys in the same order, the bulk ones as accessors sharing one getter
  // per key (their bytes in a hidden field): cells of one shape then share a hidden class, so the
  // many reads of every cell's fields stay fast (redefining a field as a per-cell closure would
  // turn each cell into a slow dictionary object).
  const cell: JsonObject = {};
  const state: Bytes = { buf, fields: span.bulk, parsed: {} };
  for (const key of Object.keys(parsed)) {
    const getter = span.bulk.some((f) => f.key === key) ? GETTERS[key as BulkField["key"]] : undefined;
    if (getter) Object.defineProperty(cell, key, { enumerable: true, configurable: false, get: getter });
    else {
      deepFreeze(parsed[key]);
      cell[key] = parsed[key];
    }
  }
  Object.defineProperty(cell, BYTES, { value: state });
  Object.freeze(cell);
  return cell;
}

/** Where a deferred cell's bulk fields are, and what reading them parsed. */
interface Bytes {
  buf: Buffer;
  fields: BulkField[];
  parsed: { [key: string]: JsonValue };
}

const BYTES = Symbol("bulk bytes");

/** The getter of a deferred field: parses its bytes once (frozen), on first read. */
function bulkGetter(key: BulkField["key"]): (this: JsonObject) => JsonValue {
  return function (this: JsonObject): JsonValue {
    const state = (this as unknown as { [BYTES]: Bytes })[BYTES];
    let value = state.parsed[key];
    if (value === undefined) {
      const field = state.fields.find((f) => f.key === key) as BulkField;
      value = parseJson(state.buf.toString("utf8", field.start, field.end));
      deepFreeze(value);
      state.parsed[key] = value;
    }
    return value;
  };
}

const GETTERS: Record<BulkField["key"], (this: JsonObject) => JsonValue> = {
  outputs: bulkGetter("outputs"),
  attachments: bulkGetter("attachments"),
};
