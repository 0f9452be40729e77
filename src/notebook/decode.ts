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
  const cell = parseJson(text) as JsonObject;
  for (const key of Object.keys(cell)) deepFreeze(cell[key]);
  for (const field of span.bulk) defer(cell, buf, field);
  Object.freeze(cell);
  return cell;
}

/** Replaces the placeholder with an enumerable getter (same key order) that parses the bytes once. */
function defer(cell: JsonObject, buf: Buffer, field: BulkField): void {
  let parsed: JsonValue | undefined;
  Object.defineProperty(cell, field.key, {
    enumerable: true,
    configurable: false,
    get() {
      if (parsed === undefined) {
        parsed = parseJson(buf.toString("utf8", field.start, field.end));
        deepFreeze(parsed);
      }
      return parsed;
    },
  });
}
