/**
 * One pass over a notebook's UTF-8 bytes, without decoding them: checks the whole text is JSON (the
 * grammar JSON.parse accepts, plus Python's NaN / Infinity / -Infinity, which json.dumps writes) and
 * finds where each cell of the top-level "cells" array lies, and within each cell where its bulky
 * fields (outputs, attachments) lie. That lets a load decode and parse only the small parts of the
 * cells and leave the bulk as bytes until someone reads it (decode.ts). Throws SyntaxError.
 */

/** A cell's field whose value is left as bytes until read. */
export interface BulkField {
  key: "outputs" | "attachments";
  /** Byte span of the value. */
  start: number;
  end: number;
}

export interface CellSpan {
  start: number;
  end: number;
  bulk: BulkField[];
}

export interface ByteScan {
  /** Every element of the single top-level "cells" array, when all are objects (else undefined). */
  cells?: CellSpan[];
  /**
   * The bulk fields can be left unparsed: each is an array of objects (outputs) or an object
   * (attachments), at most once per cell — what the structure check would otherwise read them for.
   */
  bulkOk: boolean;
  /** NaN / Infinity / -Infinity tokens (outside strings): Python's json reads them, JSON has none. */
  nonFinite: number;
}

const OBJECT = 0;
const ARRAY = 1;

// What a container is to the notebook (kept on a stack beside the container type).
const PLAIN = 0;
const CELLS = 1;
const CELL = 2;
const OUTPUTS = 3;
const ATTACHMENTS = 4;

const WS = new Uint8Array(256);
WS[0x20] = WS[0x09] = WS[0x0a] = WS[0x0d] = 1;
const ESCAPE = new Uint8Array(256); // bytes allowed after a backslash (u handled apart)
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const c of "0123456789abcdefABCDEF") HEX[c.charCodeAt(0)] = 1;

/** Invalid JSON found by the byte scan: what was wrong and at which byte offset. */
export class JsonSyntaxError extends SyntaxError {
  constructor(
    readonly what: string,
    readonly offset: number,
  ) {
    super(`${what} at byte ${offset}`);
  }
}

function fail(what: string, at: number): never {
  throw new JsonSyntaxError(what, at);
}

function keyIs(b: Uint8Array, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word.charCodeAt(k)) return false;
  return true;
}

/** End (exclusive) of the string starting at the quote at `i`. */
function stringEnd(b: Uint8Array, i: number, n: number): number {
  let j = i + 1;
  for (;;) {
    if (j >= n) fail("unterminated string", i);
    const c = b[j];
    if (c === 0x22) return j + 1;
    if (c === 0x5c) {
      const e = b[j + 1];
      if (e === 0x75 /* u */) {
        if (!(HEX[b[j + 2]] && HEX[b[j + 3]] && HEX[b[j + 4]] && HEX[b[j + 5]])) fail("bad \\u escape", j);
        j += 6;
      } else if (j + 1 < n && ESCAPE[e]) j += 2;
      else fail("bad escape", j);
    } else if (c < 0x20) fail("control character in string", j);
    else j++;
  }
}

function digitsEnd(b: Uint8Array, j: number, n: number): number {
  const from = j;
  while (j < n && b[j] >= 0x30 && b[j] <= 0x39) j++;
  if (j === from) fail("digit expected", j);
  return j;
}

/** End of the number starting at `i`; negated for -Infinity. */
function numberEnd(b: Uint8Array, i: number, n: number): number {
  let j = i;
  if (b[j] === 0x2d /* - */) {
    j++;
    if (b[j] === 0x49 /* I */) return -literalEnd(b, j, n, "Infinity");
  }
  if (b[j] === 0x30) j++;
  else if (b[j] >= 0x31 && b[j] <= 0x39) j = digitsEnd(b, j, n);
  else fail("bad number", i);
  if (b[j] === 0x2e /* . */) j = digitsEnd(b, j + 1, n);
  if (b[j] === 0x65 || b[j] === 0x45 /* e E */) {
    j++;
    if (b[j] === 0x2b || b[j] === 0x2d) j++;
    j = digitsEnd(b, j, n);
  }
  return j;
}

function literalEnd(b: Uint8Array, i: number, n: number, word: string): number {
  if (i + word.length > n || !keyIs(b, i, i + word.length, word)) fail("unexpected token", i);
  return i + word.length;
}

/** Checks `b` is one JSON value (with surrounding whitespace) and locates the cells; see ByteScan. */
export function scanJsonBytes(b: Uint8Array): ByteScan {
  const n = b.length;
  const types: number[] = [];
  const roles: number[] = [];
  const starts: number[] = [];
  let cells: CellSpan[] | undefined = [];
  let cellsArrays = 0;
  let bulk: BulkField[] = [];
  let bulkOk = true;
  let nonFinite = 0;
  /** The role the next value takes from its key (objects) or its container (arrays). */
  let role = PLAIN;
  let i = 0;

  const ws = (j: number): number => {
    while (j < n && WS[b[j]]) j++;
    return j;
  };
  /** Reads `"key" :` at j; sets `role` for the value that follows; returns the value's position. */
  const member = (j: number): number => {
    if (b[j] !== 0x22) fail("object key expected", j);
    const end = stringEnd(b, j, n);
    const depth = types.length;
    const parent = roles[depth - 1];
    role = PLAIN;
    if (depth === 1 && keyIs(b, j + 1, end - 1, "cells")) role = CELLS;
    else if (parent === CELL) {
      if (keyIs(b, j + 1, end - 1, "outputs")) role = OUTPUTS;
      else if (keyIs(b, j + 1, end - 1, "attachments")) role = ATTACHMENTS;
    }
    j = ws(end);
    if (b[j] !== 0x3a) fail("':' expected", j);
    return ws(j + 1);
  };

  i = ws(0);
  for (;;) {
    // A value starts at i, in the role set by its key or container.
    const c = b[i];
    if (i >= n) fail("value expected", i);
    if (role === CELLS && c !== 0x5b) role = PLAIN;
    if (role === CELL && c !== 0x7b) cells = undefined; // a cell that is not an object
    if ((role === OUTPUTS && c !== 0x5b) || (role === ATTACHMENTS && c !== 0x7b)) bulkOk = false;
    if (role === PLAIN && roles[types.length - 1] === OUTPUTS && c !== 0x7b) bulkOk = false;
    if (c === 0x7b || c === 0x5b) {
      if (role === CELLS) cellsArrays++;
      if (role === CELL) bulk = [];
      types.push(c === 0x7b ? OBJECT : ARRAY);
      roles.push(role);
      starts.push(i);
      i = ws(i + 1);
      const close = c === 0x7b ? 0x7d : 0x5d;
      if (b[i] !== close) {
        if (c === 0x7b) i = member(i);
        else role = role === CELLS ? CELL : PLAIN;
        continue;
      }
      // An empty container: closed below like any other.
    } else {
      if (c === 0x22) i = stringEnd(b, i, n);
      else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        i = numberEnd(b, i, n);
        if (i < 0) {
          i = -i; // -Infinity
          nonFinite++;
        }
      } else if (c === 0x74) i = literalEnd(b, i, n, "true");
      else if (c === 0x66) i = literalEnd(b, i, n, "false");
      else if (c === 0x6e) i = literalEnd(b, i, n, "null");
      else if (c === 0x4e) {
        i = literalEnd(b, i, n, "NaN");
        nonFinite++;
      } else if (c === 0x49) {
        i = literalEnd(b, i, n, "Infinity");
        nonFinite++;
      } else fail("unexpected character", i);
      i = ws(i);
    }
    // After a value (or at the closing bracket of an empty container): close what ends here.
    for (;;) {
      if (types.length === 0) {
        if (ws(i) !== n) fail("unexpected data after the JSON value", i);
        return { cells: cellsArrays === 1 ? cells : undefined, bulkOk, nonFinite };
      }
      const top = types.length - 1;
      const d = b[i];
      if (d === 0x2c /* , */) {
        i = ws(i + 1);
        if (types[top] === OBJECT) i = member(i);
        else role = roles[top] === CELLS ? CELL : PLAIN;
        break;
      }
      if (d !== (types[top] === OBJECT ? 0x7d : 0x5d)) fail("',' or closing bracket expected", i);
      const start = starts.pop() as number;
      const closed = roles.pop() as number;
      types.pop();
      i++;
      if (closed === CELL) cells?.push({ start, end: i, bulk });
      else if (closed === OUTPUTS || closed === ATTACHMENTS) {
        const key = closed === OUTPUTS ? "outputs" : "attachments";
        if (bulk.some((f) => f.key === key)) bulkOk = false; // a duplicated key: JSON.parse keeps the last
        bulk.push({ key, start, end: i });
      }
      i = ws(i);
    }
  }
}
