/**
 * A notebook file's own whitespace, read from its bytes so a save can keep it (docs/notebook-tool.md):
 * the indentation unit (from the line of the first key: 1 space for nbformat.write, 2 or 4 for
 * json.dump(indent=N) and many editors, a tab), CRLF or LF line endings, whether the file ends with
 * a line break, and for a file on one line its separators. Undefined when the bytes do not show a
 * consistent style (the caller then uses nbformat's).
 */
import type { JsonStyle } from "./serialize.js";

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

/** The style of a JSON object's bytes (already checked to be JSON); undefined when unclear. */
export function detectStyle(bytes: Uint8Array, cellSpans?: [number, number][]): JsonStyle | undefined {
  const n = bytes.length;
  let i = 0;
  while (i < n && (bytes[i] === SPACE || bytes[i] === TAB || bytes[i] === LF || bytes[i] === CR)) i++;
  if (bytes[i] !== 0x7b /* { */) return undefined;
  // The whitespace between the opening brace and the first key.
  let j = i + 1;
  while (j < n && (bytes[j] === SPACE || bytes[j] === TAB || bytes[j] === LF || bytes[j] === CR)) j++;
  const gap = Buffer.from(bytes.subarray(i + 1, j)).toString("latin1");
  let end = n;
  while (end > 0 && (bytes[end - 1] === SPACE || bytes[end - 1] === TAB)) end--;
  const crlfEnd = end >= 2 && bytes[end - 2] === CR && bytes[end - 1] === LF;
  const finalNewline = end > 0 && bytes[end - 1] === LF;
  if (gap === "") {
    if (bytes[j] !== 0x22 /* " */) return { ...compact(":"), finalNewline }; // {} — nothing to learn
    const keySep = keySeparatorAfterKey(bytes, j);
    if (!keySep) return undefined;
    let itemSep: "," | ", " = keySep === ": " ? ", " : ",";
    if (cellSpans && cellSpans.length > 1) {
      const between = Buffer.from(bytes.subarray(cellSpans[0][1], cellSpans[1][0])).toString("latin1");
      if (between !== "," && between !== ", ") return undefined;
      itemSep = between;
    }
    return { indent: null, eol: crlfEnd ? "\r\n" : "\n", finalNewline, itemSep, keySep };
  }
  const m = /^(\r?\n)([ \t]+)$/.exec(gap);
  if (!m) return undefined;
  const indent = m[2];
  if (!/^(?: +|\t+)$/.test(indent)) return undefined;
  const eol = m[1] === "\r\n" ? "\r\n" : "\n";
  return { indent, eol, finalNewline, itemSep: ",", keySep: ": " };
}

function compact(keySep: ":" | ": "): Omit<JsonStyle, "finalNewline"> {
  return { indent: null, eol: "\n", itemSep: keySep === ": " ? ", " : ",", keySep };
}

/** `:` or `: ` after the string key starting at the quote at `at`; undefined when neither. */
function keySeparatorAfterKey(bytes: Uint8Array, at: number): ":" | ": " | undefined {
  let k = at + 1;
  while (k < bytes.length && bytes[k] !== 0x22) k += bytes[k] === 0x5c ? 2 : 1;
  if (bytes[k + 1] !== 0x3a /* : */) return undefined;
  if (bytes[k + 2] === SPACE) return bytes[k + 3] === SPACE ? undefined : ": ";
  return ":";
}
