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
import { randomBytes } from "../sys/crypto.js";

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
  /** Position among all number tokens of the text (0-based). */
  ordinal: number;
}

interface Scan {
  raws: RawToken[];
  /** Number tokens and object keys in the text; NaN/Infinity present (JSON.parse rejects them). */
  numbers: number;
  keys: number;
  nonJson: boolean;
}

/**
 * One pass over the text, jumping from quote to quote with String#indexOf: the number tokens outside
 * strings that JSON.parse would not keep exactly.
 */
function scan(text: string): Scan {
  const raws: RawToken[] = [];
  const n = text.length;
  let numbers = 0;
  let keys = 0;
  let nonJson = false;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return { raws, numbers, keys, nonJson }; // unterminated: JSON.parse reports it
        let k = j - 1;
        while (text.charCodeAt(k) === 92 /* \\ */) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      let k = j + 1;
      let d = text.charCodeAt(k);
      while (d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) d = text.charCodeAt(++k);
      if (d === 0x3a /* : */) keys++;
      i = j + 1;
    } else if ((c >= 48 && c <= 57) || c === 45) {
      let j = i + 1;
      while (j < n && isNumberChar(text.charCodeAt(j))) j++;
      const ordinal = numbers++;
      if (c === 45 && text.startsWith("Infinity", j)) {
        raws.push({ start: i, end: j + 8, text: "-Infinity", ordinal });
        nonJson = true;
        i = j + 8;
        continue;
      }
      const token = text.slice(i, j);
      if (!SAFE_INT.test(token) || token === "-0") {
        if (STRICT_NUMBER.test(token) && !isSafeInteger(token))
          raws.push({ start: i, end: j, text: token, ordinal });
      }
      i = j;
    } else if (c === 0x4e /* N */ && text.startsWith("NaN", i)) {
      raws.push({ start: i, end: i + 3, text: "NaN", ordinal: numbers++ });
      nonJson = true;
      i += 3;
    } else if (c === 0x49 /* I */ && text.startsWith("Infinity", i)) {
      raws.push({ start: i, end: i + 8, text: "Infinity", ordinal: numbers++ });
      nonJson = true;
      i += 8;
    } else {
      i++;
    }
  }
  return { raws, numbers, keys, nonJson };
}

function isSafeInteger(token: string): boolean {
  if (token === "-0" || !/^-?(?:0|[1-9]\d*)$/.test(token)) return false;
  return Number.isSafeInteger(Number(token));
}

/** Parses JSON text (plus Python's NaN/Infinity) keeping non-trivial numbers as RawNumber. Throws SyntaxError. */
export function parseJson(text: string): JsonValue {
  const sc = scan(text);
  const { raws } = sc;
  if (raws.length === 0) return JSON.parse(text) as JsonValue;
  if (!sc.nonJson) {
    const value = JSON.parse(text) as JsonValue;
    if (assignInOrder(value, sc)) return value;
  }
  return parseWithSentinels(text, raws);
}

const INDEX_KEY = /^(?:0|[1-9]\d*)$/;

/**
 * Puts RawNumbers into a tree JSON.parse built from the same text, by visiting numbers in document
 * order. That order is the text's only when no object has array-index-like keys (JS lists those
 * first) and no key is duplicated (counted: keys seen must equal keys in the text); returns false
 * otherwise, and the caller parses again the slow way.
 */
function assignInOrder(value: JsonValue, sc: Scan): boolean {
  let ordinal = 0;
  let keys = 0;
  let next = 0;
  const raws = sc.raws;
  let ok = true;
  const visit = (v: JsonValue): JsonValue => {
    if (typeof v === "number") {
      const raw = raws[next];
      if (raw !== undefined && raw.ordinal === ordinal) {
        next++;
        ordinal++;
        if (Number(raw.text) !== v) ok = false;
        return new RawNumber(raw.text);
      }
      ordinal++;
      return v;
    }
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length && ok; i++) {
        const x = v[i];
        if (x !== null && (typeof x === "object" || typeof x === "number")) v[i] = visit(x);
      }
      return v;
    }
    const obj = v as JsonObject;
    const ks = Object.keys(obj);
    keys += ks.length;
    if (ks.length > 0 && INDEX_KEY.test(ks[0])) ok = false;
    for (let i = 0; i < ks.length && ok; i++) {
      const x = obj[ks[i]];
      if (x !== null && (typeof x === "object" || typeof x === "number")) obj[ks[i]] = visit(x);
    }
    return obj;
  };
  visit(value);
  return ok && ordinal === sc.numbers && keys === sc.keys && next === raws.length;
}

/** The slow, always-right way: number tokens become sentinel strings for JSON.parse, then RawNumbers. */
function parseWithSentinels(text: string, raws: RawToken[]): JsonValue {
  const sentinel = `\u0000nbagent-number-${randomBytes(8).toString("hex")}:`;
  const parts: string[] = [];
  let prev = 0;
  for (let r = 0; r < raws.length; r++) {
    parts.push(text.slice(prev, raws[r].start), JSON.stringify(sentinel + r));
    prev = raws[r].end;
  }
  parts.push(text.slice(prev));
  const value = JSON.parse(parts.join("")) as JsonValue;
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
  return revive(value);
}
