/**
 * JSON parsing that keeps every number exactly as written.
 *
 * JSON.parse turns `1.0` into 1 and `12345678901234567890` into a rounded double; Python's json keeps
 * both (float repr and arbitrary-precision int), so a notebook written by nbformat would change on
 * a load+save round trip. We scan the text once (string-aware) for number tokens; tokens that are
 * safe integers are left to JSON.parse, every other one (floats, exponents, big ints, `-0`, and
 * Python's `NaN` / `Infinity` / `-Infinity`, which json.dumps writes by default) is swapped for a
 * unique sentinel string, JSON.parse runs natively, and a walk puts RawNumber objects back.
 * The serialiser prints a RawNumber's text verbatim.
 */
import { randomBytes } from "node:crypto";

/** Set by the serialiser while it runs JSON.stringify: RawNumber.toJSON then emits a marker. */
let rawMarker: string | undefined;

/** Runs `fn` with RawNumber.toJSON returning `marker + text` (see serialize.ts). */
export function withRawMarker<T>(marker: string, fn: () => T): T {
  rawMarker = marker;
  try {
    return fn();
  } finally {
    rawMarker = undefined;
  }
}

/** A number token kept verbatim (its exact source text). */
export class RawNumber {
  constructor(readonly text: string) {}
  valueOf(): number {
    return Number(this.text);
  }
  toJSON(): number | string {
    return rawMarker === undefined ? Number(this.text) : rawMarker + this.text;
  }
}

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | RawNumber
  | JsonValue[]
  | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

const STRICT_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const SAFE_INT = /^-?(?:0|[1-9]\d{0,14})$/; // up to 15 digits: always a safe integer

function isNumberChar(c: number): boolean {
  // 0-9 . + - e E
  return (c >= 48 && c <= 57) || c === 46 || c === 43 || c === 45 || c === 101 || c === 69;
}

interface RawToken {
  start: number;
  end: number;
  text: string;
}

interface Scan {
  raws: RawToken[];
  /** Byte spans of the elements of the top-level "cells" array that are objects (undefined: unknown). */
  cellSpans?: [number, number][];
}

const Q = 0x22; // "
const BS = 0x5c; // \\

/**
 * One pass over the UTF-8 bytes (multi-byte sequences never contain ASCII bytes, so structure and
 * number tokens can be found byte-wise): number tokens outside strings that JSON.parse would not
 * keep exactly, and where each cell object of the top-level "cells" array starts and ends.
 */
function scan(buf: Buffer): Scan {
  const raws: RawToken[] = [];
  const n = buf.length;
  let depth = 0;
  let topKey: string | undefined;
  let cellsSeen = 0; // how many top-level "cells" arrays were opened
  let inCells = false;
  let cellStart = -1;
  let cellSpans: [number, number][] | undefined = [];
  let i = 0;
  while (i < n) {
    const c = buf[i];
    if (c === Q) {
      let j = i;
      for (;;) {
        j = buf.indexOf(Q, j + 1);
        if (j < 0) return { raws }; // unterminated string: JSON.parse will report it
        let k = j - 1;
        while (buf[k] === BS) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      if (depth === 1) {
        let k = j + 1;
        while (buf[k] === 0x20 || buf[k] === 0x0a || buf[k] === 0x0d || buf[k] === 0x09) k++;
        if (buf[k] === 0x3a /* : */) topKey = buf.toString("utf8", i + 1, j);
      }
      i = j + 1;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth === 1 && c === 0x5b && topKey === "cells") {
        cellsSeen++;
        inCells = true;
      } else if (depth === 2 && inCells) {
        if (c === 0x7b) cellStart = i;
        else cellSpans = undefined; // a cell that is not an object: no spans
      }
      depth++;
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
      if (depth === 2 && inCells && c === 0x7d && cellStart >= 0) {
        cellSpans?.push([cellStart, i + 1]);
        cellStart = -1;
      } else if (depth === 1 && inCells) inCells = false;
      i++;
    } else if ((c >= 48 && c <= 57) || c === 45) {
      let j = i + 1;
      while (j < n && isNumberChar(buf[j])) j++;
      if (depth === 2 && inCells) cellSpans = undefined; // a number as a cell
      if (c === 45 && buf.toString("latin1", j, j + 8) === "Infinity") {
        raws.push({ start: i, end: j + 8, text: "-Infinity" });
        i = j + 8;
        continue;
      }
      const token = buf.toString("latin1", i, j);
      if (!SAFE_INT.test(token) || token === "-0") {
        if (STRICT_NUMBER.test(token) && !isSafeInteger(token)) raws.push({ start: i, end: j, text: token });
      }
      i = j;
    } else if (c === 0x4e /* N */ && buf.toString("latin1", i, i + 3) === "NaN") {
      raws.push({ start: i, end: i + 3, text: "NaN" });
      i += 3;
    } else if (c === 0x49 /* I */ && buf.toString("latin1", i, i + 8) === "Infinity") {
      raws.push({ start: i, end: i + 8, text: "Infinity" });
      i += 8;
    } else {
      if (depth === 2 && inCells && (c === 0x74 || c === 0x66 || c === 0x6e)) cellSpans = undefined; // true/false/null
      i++;
    }
  }
  return { raws, cellSpans: cellsSeen === 1 ? cellSpans : undefined };
}

function isSafeInteger(token: string): boolean {
  if (token === "-0" || !/^-?(?:0|[1-9]\d*)$/.test(token)) return false;
  return Number.isSafeInteger(Number(token));
}

/** Parses JSON text (plus Python's NaN/Infinity) keeping non-trivial numbers as RawNumber. Throws SyntaxError. */
export function parseJson(text: string): JsonValue {
  return parseJsonBytes(Buffer.from(text, "utf8")).value;
}

export interface ParsedJson {
  value: JsonValue;
  /** Byte spans [start, end) of the top-level "cells" array's objects, when they could be located. */
  cellSpans?: [number, number][];
}

/** Like parseJson, from UTF-8 bytes; also reports where each cell's text is (for splicing saves). */
export function parseJsonBytes(buf: Buffer): ParsedJson {
  const { raws, cellSpans } = scan(buf);
  if (raws.length === 0) return { value: JSON.parse(buf.toString("utf8")) as JsonValue, cellSpans };
  const sentinel = `\u0000nbagent-number-${randomBytes(8).toString("hex")}:`;
  const parts: Buffer[] = [];
  let prev = 0;
  for (let r = 0; r < raws.length; r++) {
    parts.push(buf.subarray(prev, raws[r].start), Buffer.from(JSON.stringify(sentinel + r)));
    prev = raws[r].end;
  }
  parts.push(buf.subarray(prev));
  const value = JSON.parse(Buffer.concat(parts).toString("utf8")) as JsonValue;
  const numbers = raws.map((r) => new RawNumber(r.text));
  const revive = (v: JsonValue): JsonValue => {
    if (typeof v === "string") {
      if (v.charCodeAt(0) === 0 && v.startsWith(sentinel)) return numbers[Number(v.slice(sentinel.length))];
      return v;
    }
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (x !== null && (typeof x === "object" || typeof x === "string")) v[i] = revive(x);
      }
      return v;
    }
    const obj = v as JsonObject;
    for (const key of Object.keys(obj)) {
      if (key.charCodeAt(0) === 0 && key.startsWith(sentinel)) {
        throw new SyntaxError("a number cannot be an object key");
      }
      const x = obj[key];
      if (x !== null && (typeof x === "object" || typeof x === "string")) obj[key] = revive(x);
    }
    return obj;
  };
  return { value: revive(value), cellSpans };
}
