/**
 * Serialises JSON exactly like Python's `nbformat.write`, i.e.
 * `json.dumps(nb, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"`.
 * - keys sorted by code point (Python's str order), whatever JS property order says;
 * - strings escaped as Python does with ensure_ascii=False (same set as JSON.stringify);
 * - RawNumber printed verbatim; JS integers as integers; other JS numbers as Python's float repr.
 * A JsonStyle changes only the whitespace (a file's own indentation, line endings, final newline;
 * see docs/notebook-tool.md): keys stay sorted, as nbformat and VS Code write them — except in
 * objects copied from a file that had its own unsorted key order (keepKeyOrder: a Colab cell), which
 * keep it.
 */
import { randomBytes } from "../sys/crypto.js";
import { RawNumber, withRawMarker } from "./json.js";

/** Python's `repr(float)`: shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e16. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = x.toExponential().split("e");
  const exp = Number(expText);
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
    const whole = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
    const frac = digits.slice(exp + 1);
    return `${sign}${whole}.${frac || "0"}`;
  }
  const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = Math.abs(exp);
  return `${sign}${head}e${exp < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
}

/** A float nbagent creates, printed the way Python would (`1.0`, not `1`). */
export function pyFloat(x: number): RawNumber {
  return new RawNumber(pyFloatRepr(x));
}

function formatNumber(n: number): string {
  if (Number.isSafeInteger(n)) return String(n === 0 ? 0 : n);
  if (Number.isInteger(n)) return BigInt(n).toString();
  return pyFloatRepr(n);
}

const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const WIDE = /[\ud800-\uffff]/;

function byCodePoint(a: string, b: string): number {
  const la = a.length;
  const lb = b.length;
  for (let i = 0, j = 0; i < la && j < lb; ) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(j)!;
    if (ca !== cb) return ca - cb;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return la - lb === 0 ? 0 : a < b ? -1 : 1;
}

/** Objects whose keys are written in their own (insertion) order, not sorted. */
const ownOrder = new WeakSet<object>();

/** Whether these keys are in Python's sorted order already. */
export function keysSorted(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) {
    const [a, b] = [keys[i - 1], keys[i]];
    if (WIDE.test(a) || WIDE.test(b) ? byCodePoint(a, b) >= 0 : !(a < b)) return false;
  }
  return true;
}

/**
 * A copy of an object read from a file, whose keys the file did not have sorted (Colab writes
 * "cell_type", "source", "metadata", …): it is written in its own key order, so an edited cell's
 * unchanged fields stay on their lines; keys added later come last. Objects with array-index-like
 * keys are left sorted (JS cannot keep their order).
 */
export function keepKeyOrder(obj: object, originalKeys: readonly string[]): void {
  if (keysSorted(originalKeys) || originalKeys.some((k) => ARRAY_INDEX.test(k))) return;
  ownOrder.add(obj);
}

function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  if (ownOrder.has(obj)) return keys;
  if (keys.length < 2) return keys;
  let sorted = true;
  let wide = false;
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && keys[i - 1] >= keys[i]) sorted = false;
    if (/[\ud800-\uffff]/.test(keys[i])) wide = true;
  }
  if (wide) return keys.sort(byCodePoint);
  return sorted ? keys : keys.sort();
}

/** The whitespace of a JSON file: what varies between nbformat.write, json.dump(indent=N) and editors. */
export interface JsonStyle {
  /** One level of indentation (spaces or tabs); null for a file on one line (no line breaks). */
  indent: string | null;
  /** Line ending between lines ("\n" or "\r\n"). */
  eol: "\n" | "\r\n";
  /** Whether the file ends with a line ending after the closing brace. */
  finalNewline: boolean;
  /** Separators of a one-line file: `,` and `:` (JSON.stringify) or `, ` and `: ` (Python's json.dumps). */
  itemSep: "," | ", ";
  keySep: ":" | ": ";
}

/** nbformat.write's layout. */
export const NBFORMAT_STYLE: JsonStyle = Object.freeze({
  indent: " ",
  eol: "\n",
  finalNewline: true,
  itemSep: ",",
  keySep: ": ",
});

/** JSON.stringify gives exactly this style's output (before line endings are applied). */
function nativeStyle(style: JsonStyle): boolean {
  if (style.indent === null) return style.itemSep === "," && style.keySep === ":";
  return style.indent.length <= 10;
}

function dump(v: unknown, depth: number, style: JsonStyle, lines: string[]): string {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return formatNumber(v);
    case "boolean":
      return v ? "true" : "false";
    case "bigint":
      return v.toString();
    case "object":
      break;
    default:
      throw new TypeError(`cannot serialise a ${typeof v} in a notebook`);
  }
  if (v === null) return "null";
  if (v instanceof RawNumber) return v.text;
  const compact = style.indent === null;
  const newline = (d: number) => {
    if (compact) return "";
    while (lines.length <= d) lines.push(`${lines[lines.length - 1]}${style.indent}`);
    return lines[d];
  };
  const inner = newline(depth + 1);
  const sep = compact ? style.itemSep : ",";
  const keySep = compact ? style.keySep : ": ";
  if (Array.isArray(v)) {
    const n = v.length;
    if (n === 0) return "[]";
    let s = `[${inner}${dump(v[0] ?? null, depth + 1, style, lines)}`;
    for (let i = 1; i < n; i++) s += `${sep}${inner}${dump(v[i] ?? null, depth + 1, style, lines)}`;
    return `${s}${newline(depth)}]`;
  }
  const obj = v as Record<string, unknown>;
  let s = "";
  for (const key of sortedKeys(obj)) {
    const x = obj[key];
    if (x === undefined) continue;
    s += `${s ? sep : "{"}${inner}${JSON.stringify(key)}${keySep}${dump(x, depth + 1, style, lines)}`;
  }
  return s ? `${s}${newline(depth)}}` : "{}";
}

/**
 * Prepares `v` for native JSON.stringify: puts every object's keys in Python's sorted order (in
 * place; key order carries no meaning in JSON) and counts RawNumbers. Returns -1 when native output
 * cannot match Python: keys that JS always orders first (array-index-like keys such as "10"), or
 * numbers that are not safe integers, or values JSON.stringify would render differently.
 */
function prepare(v: unknown): number {
  if (typeof v !== "object" || v === null) {
    if (typeof v === "number") return Number.isSafeInteger(v) ? 0 : -1;
    return typeof v === "string" || typeof v === "boolean" ? 0 : -1;
  }
  if (v instanceof RawNumber) return 1;
  let raws = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (typeof x === "string") continue;
      const r = prepare(x);
      if (r < 0) return -1;
      raws += r;
    }
    return raws;
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj);
  let sorted = true;
  const own = ownOrder.has(obj);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (ARRAY_INDEX.test(k)) return -1;
    if (i > 0 && !(keys[i - 1] < k)) sorted = false;
    else if (i > 0 && (WIDE.test(k) || WIDE.test(keys[i - 1])) && byCodePoint(keys[i - 1], k) >= 0)
      sorted = false;
    const x = obj[k];
    if (typeof x === "string") continue;
    if (x === undefined) continue;
    const r = prepare(x);
    if (r < 0) return -1;
    raws += r;
  }
  if (!sorted && !own) {
    if (Object.isFrozen(obj)) return -1;
    const order = sortedKeys(obj);
    const values = order.map((k) => obj[k]);
    for (const k of order) delete obj[k];
    order.forEach((k, i) => {
      obj[k] = values[i];
    });
  }
  return raws;
}

/** The text with "\n" line breaks, no final newline (the slow, fully general way). */
function dumpAll(nb: unknown, style: JsonStyle): string {
  return dump(nb, 0, style, ["\n"]);
}

/** The text with "\n" line breaks, no final newline. */
function body(nb: unknown, style: JsonStyle): string {
  const raws = prepare(nb);
  if (raws < 0 || !nativeStyle(style)) return dumpAll(nb, style);
  const indent = style.indent ?? "";
  if (raws === 0) return JSON.stringify(nb, null, indent);
  // RawNumbers come out of JSON.stringify as marker strings; put their verbatim text back.
  const nonce = randomBytes(6).toString("hex");
  const text = withRawMarker(`\u0000${nonce}:`, () => JSON.stringify(nb, null, indent));
  const parts = text.split(`"\\u0000${nonce}:`);
  let out = parts[0];
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i];
    const end = part.indexOf('"');
    out += part.slice(0, end) + part.slice(end + 1);
  }
  return out;
}

/** Line breaks of JSON text are all layout (strings escape theirs): "\n" → the style's. */
function withEol(text: string, style: JsonStyle): string {
  return style.eol === "\n" ? text : text.replaceAll("\n", style.eol);
}

/** The whole file's text: by default what `nbformat.write` would produce for this (line-split) notebook. */
export function serializeNotebook(nb: unknown, style: JsonStyle = NBFORMAT_STYLE): string {
  return withEol(body(nb, style), style) + (style.finalNewline ? style.eol : "");
}

/** One cell as it appears inside the file (at depth 2 of the notebook). */
export function serializeCell(cell: unknown, style: JsonStyle = NBFORMAT_STYLE): string {
  const text = body(cell, style);
  if (style.indent === null) return text;
  return withEol(text.replaceAll("\n", `\n${style.indent}${style.indent}`), style);
}

/** The slow, fully general serialiser (exported for tests that compare both paths). */
export function serializeNotebookSlow(nb: unknown, style: JsonStyle = NBFORMAT_STYLE): string {
  return withEol(dumpAll(nb, style), style) + (style.finalNewline ? style.eol : "");
}
