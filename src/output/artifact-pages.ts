/**
 * Paging and searching an artifact by lines without loading it whole (rules: docs/artifacts.md).
 * A position is a 1-based line and a 1-based byte column in it; a page ends either after a line or
 * inside a line longer than the page, and always names the position where the next page starts, so
 * paging never repeats or skips a byte. A line index (line count, a mark every MARK_STEP lines, and
 * where every long line starts) lets a page start anywhere without scanning from the top.
 */
import type { FileHandle } from "../sys/fs-promises.js";
import { pluralBare } from "../sys/units.js";

const MARK_STEP = 1024;
/** Lines at least this long are listed in the index with their start and length. */
const LONG_LINE = 64 * 1024;
const NEWLINE = Buffer.from("\n");

export interface LineIndex {
  size: number;
  mtimeMs: number;
  /** Lines in the file (a last line without a newline counts). */
  lines: number;
  /** marks[k]: the byte where line k*MARK_STEP+1 starts. */
  marks: number[];
  /** Lines of LONG_LINE bytes or more: where they start and their length (without the newline). */
  long: Map<number, { start: number; length: number }>;
  /** The keys of `long`, ascending. */
  longLines: number[];
}

export type ArtifactErrorCode = "not_found" | "refused" | "past_end" | "column_past_end" | "bad_pattern";

/** A read the caller asked for that cannot be served; the fields say why (tools/ and cli/ word it). */
export class ArtifactReadError extends Error {
  constructor(
    readonly code: ArtifactErrorCode,
    message: string,
    readonly facts: {
      lines?: number;
      line?: number;
      lineBytes?: number;
      offset?: number;
      column?: number;
      /** Past the end: the artifact's size, and set when it is known to hold only part of its output. */
      sizeBytes?: number;
      incomplete?: { reason?: string; message?: string };
      /**
       * "refused": what stands at the id's name instead of a file nbagent wrote, which was not read
       * (docs/artifacts.md): a symbolic link, something that is not a regular file, or another
       * user's file (`ownerUid`); `kernelWritable` when it is in a folder kernels are given.
       */
      refusal?: "symlink" | "not_file" | "foreign";
      ownerUid?: number;
      kernelWritable?: boolean;
    } = {},
  ) {
    super(message);
  }
}

export interface PageRequest {
  /** 1-based first line. */
  offset: number;
  /** 1-based byte in that line to start at (continues a line cut by the previous page). */
  column: number;
  /** Lines at most. */
  limit: number;
  /** Bytes at most (not counting newlines); a first line longer than this is cut. */
  maxBytes: number;
}

/** Where the next page starts: `{offset}` for a line's start, `{offset, column}` inside a line. */
export interface ArtifactPosition {
  offset: number;
  column?: number;
}

export interface ArtifactPage {
  /** The bytes shown, exactly as in the file (newlines included). */
  data: Buffer;
  startLine: number;
  startColumn: number;
  /** The last line any byte of which is shown (startLine - 1 when nothing is). */
  endLine: number;
  /** Lines in the artifact. */
  lines: number;
  sizeBytes: number;
  /** The first or last line shown only in part: its length and the 1-based byte range shown. */
  partial: { line: number; lineBytes: number; from: number; to: number }[];
  /** Undefined when the page reaches the end of the artifact. */
  next?: ArtifactPosition;
}

/** Builds the line index of the file as it is now (`size` bytes). */
export async function buildLineIndex(file: FileHandle, size: number, mtimeMs: number): Promise<LineIndex> {
  const marks = [0];
  const long = new Map<number, { start: number; length: number }>();
  let line = 1;
  let lineStart = 0;
  let base = 0;
  if (size > 0) {
    const stream = file.createReadStream({
      start: 0,
      end: size - 1,
      highWaterMark: 1 << 20,
      autoClose: false,
    });
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let i = 0;
      for (let nl = chunk.indexOf(0x0a, i); nl >= 0; nl = chunk.indexOf(0x0a, i)) {
        const at = base + nl;
        if (at - lineStart >= LONG_LINE) long.set(line, { start: lineStart, length: at - lineStart });
        line++;
        lineStart = at + 1;
        if ((line - 1) % MARK_STEP === 0) marks.push(lineStart);
        i = nl + 1;
      }
      base += chunk.length;
    }
  }
  const lastOpen = lineStart < base;
  if (lastOpen && base - lineStart >= LONG_LINE)
    long.set(line, { start: lineStart, length: base - lineStart });
  return {
    size: base,
    mtimeMs,
    lines: lastOpen ? line : line - 1,
    marks,
    long,
    longLines: [...long.keys()],
  };
}

/**
 * Calls visit for every piece of every line from byte `start` (where line `firstLine` starts) up to
 * byte `end`: the piece's bytes (without the newline), whether the line ends with it, and whether a
 * newline follows. visit returns false to stop.
 */
async function scanLines(
  file: FileHandle,
  start: number,
  end: number,
  firstLine: number,
  visit: (line: number, data: Buffer, ends: boolean, newline: boolean) => boolean,
): Promise<void> {
  if (start >= end) return;
  const stream = file.createReadStream({ start, end: end - 1, highWaterMark: 256 * 1024, autoClose: false });
  let line = firstLine;
  let open = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let pos = 0;
      while (pos < chunk.length) {
        const nl = chunk.indexOf(0x0a, pos);
        if (nl < 0) {
          open = true;
          if (!visit(line, chunk.subarray(pos), false, false)) return;
          break;
        }
        open = false;
        if (!visit(line, chunk.subarray(pos, nl), true, true)) return;
        line++;
        pos = nl + 1;
      }
    }
    if (open) visit(line, Buffer.alloc(0), true, false);
  } finally {
    stream.destroy();
  }
}

/** The largest cut ≤ n that does not split a UTF-8 character (at least one whole character). */
export function charBoundary(b: Buffer, n: number): number {
  if (b.length <= n) return b.length;
  let m = n;
  while (m > 0 && (b[m] & 0xc0) === 0x80) m--;
  if (m > 0) return m;
  m = 1;
  while (m < b.length && (b[m] & 0xc0) === 0x80) m++;
  return m;
}

function pastEnd(index: LineIndex, offset: number): ArtifactReadError {
  return new ArtifactReadError(
    "past_end",
    `offset ${offset} is past the end: the artifact has ${pluralBare(index.lines, "line")}`,
    { lines: index.lines, offset },
  );
}

function columnPastEnd(line: number, lineBytes: number, column: number): ArtifactReadError {
  return new ArtifactReadError(
    "column_past_end",
    `column ${column} is past the end of line ${line} (${pluralBare(lineBytes, "byte")})`,
    { line, lineBytes, column },
  );
}

/** Where to start scanning for `offset`: the nearest mark or long line's end at or before it. */
function scanStart(index: LineIndex, offset: number): { start: number; line: number } {
  const k = Math.min(Math.floor((offset - 1) / MARK_STEP), index.marks.length - 1);
  let start = index.marks[k];
  let line = k * MARK_STEP + 1;
  // the last long line before offset, if it is after the mark: start just past it
  let lo = 0;
  let hi = index.longLines.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (index.longLines[mid] < offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found >= 0 && index.longLines[found] >= line) {
    const l = index.longLines[found];
    const info = index.long.get(l)!;
    start = info.start + info.length + 1;
    line = l + 1;
  }
  return { start, line };
}

/** One page of the open artifact `file` (described by `index`), from line `offset`, byte `column`. */
export async function readPage(file: FileHandle, index: LineIndex, req: PageRequest): Promise<ArtifactPage> {
  const { offset, column, limit, maxBytes } = req;
  const page: ArtifactPage = {
    data: Buffer.alloc(0),
    startLine: offset,
    startColumn: column,
    endLine: offset - 1,
    lines: index.lines,
    sizeBytes: index.size,
    partial: [],
  };
  if (index.lines === 0 && offset === 1) {
    if (column > 1) throw columnPastEnd(1, 0, column);
    return page;
  }
  if (offset > index.lines) throw pastEnd(index, offset);
  const known = index.long.get(offset);
  let from: { start: number; line: number };
  let skip = column - 1;
  if (known) {
    if (column > known.length) throw columnPastEnd(offset, known.length, column);
    from = { start: known.start + skip, line: offset };
    skip = 0;
  } else from = scanStart(index, offset);

  const out: Buffer[] = [];
  let kept = 0;
  let linesShown = 0;
  let error: ArtifactReadError | undefined;
  // the line being read
  let line = 0;
  let lineLen = 0; // its bytes seen (from the scan start; + skip for the first line)
  let pending: Buffer[] = [];
  let pendingLen = 0;
  let first = false;
  let overflow = false; // the first line had more bytes than the room left

  /**
   * The first line of the page did not fit: ends the page inside it and returns true, unless the
   * cut (on a character boundary) takes the rest of the line anyway.
   */
  const cutLine = (lineBytes: number): boolean => {
    const bytes = Buffer.concat(pending);
    const n = charBoundary(bytes, maxBytes - kept);
    if (n >= lineBytes - column + 1) return false;
    out.push(bytes.subarray(0, n));
    kept += n;
    page.endLine = line;
    page.partial.push({ line, lineBytes, from: column, to: column + n - 1 });
    page.next = { offset: line, column: column + n };
    return true;
  };

  await scanLines(file, from.start, index.size, from.line, (l, piece, ends, newline) => {
    if (l < offset) return true;
    if (l !== line) {
      if (linesShown >= limit) {
        page.next = { offset: l };
        return false;
      }
      line = l;
      lineLen = l === offset && known ? column - 1 : 0;
      pending = [];
      pendingLen = 0;
      first = linesShown === 0;
      overflow = false;
    }
    let data = piece;
    lineLen += piece.length;
    if (skip > 0 && l === offset) {
      const s = Math.min(skip, data.length);
      data = data.subarray(s);
      skip -= s;
    }
    const room = maxBytes - kept;
    if (first) {
      // keep up to room + 4 bytes, enough to cut on a character boundary
      const want = room + 4 - pendingLen;
      if (want > 0) {
        const take = data.subarray(0, want);
        pending.push(take);
        pendingLen += take.length;
      }
      if (pendingLen > room) overflow = true;
      if (overflow && known && !ends && cutLine(known.length)) return false;
      if (!ends) return true;
      if (column > 1 && l === offset && column > Math.max(1, lineLen)) {
        error = columnPastEnd(l, lineLen, column);
        return false;
      }
      if (overflow && cutLine(lineLen)) return false;
    } else {
      if (pendingLen + data.length > room) {
        page.next = { offset: l };
        return false;
      }
      pending.push(data);
      pendingLen += data.length;
      if (!ends) return true;
    }
    out.push(...pending);
    kept += pendingLen;
    if (newline) out.push(NEWLINE);
    if (l === offset && column > 1)
      page.partial.push({ line: l, lineBytes: lineLen, from: column, to: lineLen });
    page.endLine = l;
    linesShown++;
    return true;
  });
  if (error) throw error;
  page.data = Buffer.concat(out);
  return page;
}

export interface PatternSpec {
  /** The pattern as given. */
  source: string;
  regex: RegExp;
  ignoreCase: boolean;
}

/** A JavaScript regular expression; a leading `(?i)` makes it ignore case. Throws bad_pattern. */
export function parsePattern(pattern: string): PatternSpec {
  const ignoreCase = pattern.startsWith("(?i)");
  const body = ignoreCase ? pattern.slice(4) : pattern;
  if (!body) throw new ArtifactReadError("bad_pattern", "the pattern is empty");
  try {
    return { source: pattern, regex: new RegExp(body, ignoreCase ? "i" : ""), ignoreCase };
  } catch (err) {
    throw new ArtifactReadError("bad_pattern", (err as Error).message);
  }
}

export interface SearchRequest {
  /** 1-based line to list matches from. */
  offset: number;
  /** Matching lines to list at most. */
  limit: number;
  /** Bytes of listed text at most. */
  maxBytes: number;
}

export interface LineMatch {
  line: number;
  lineBytes: number;
  /** 1-based byte of the first match in the line. */
  column: number;
  /** The line, or the part of it around the match. */
  text: string;
  /** Where `text` starts in the line (1-based byte) and whether it is the whole line. */
  textColumn: number;
  whole: boolean;
}

export interface ArtifactSearch {
  lines: number;
  sizeBytes: number;
  /** Matching lines in the whole artifact. */
  total: number;
  /** Matching lines before `offset`. */
  before: number;
  matches: LineMatch[];
  /** The first matching line not listed. */
  next?: number;
  /** Lines longer than SEARCH_WINDOW bytes were searched in overlapping windows. */
  windowed: number;
}

/** Longer lines are searched in windows of this many bytes, overlapping by SEARCH_OVERLAP. */
export const SEARCH_WINDOW = 1 << 20;
export const SEARCH_OVERLAP = 4096;
/** A listed line longer than this shows the part around its match. */
const SHOW_BYTES = 400;
const SHOW_BEFORE = 100;

/** Text of b[from, to) widened or narrowed to character boundaries. */
function textOf(b: Buffer, from: number, to: number): { text: string; from: number } {
  let s = Math.max(0, from);
  while (s > 0 && (b[s] & 0xc0) === 0x80) s--;
  const e = to >= b.length ? b.length : charBoundary(b, to);
  return { text: b.subarray(s, Math.max(s, e)).toString("utf8"), from: s };
}

/** Every line of the artifact matching `spec`; lists those from `offset` on within the bounds. */
export async function searchLines(
  file: FileHandle,
  index: LineIndex,
  spec: PatternSpec,
  req: SearchRequest,
): Promise<ArtifactSearch> {
  const result: ArtifactSearch = {
    lines: index.lines,
    sizeBytes: index.size,
    total: 0,
    before: 0,
    matches: [],
    windowed: 0,
  };
  if (req.offset > Math.max(1, index.lines)) throw pastEnd(index, req.offset);
  let listedBytes = 0;
  let line = 0;
  let parts: Buffer[] = [];
  let partsLen = 0;
  let windowStart = 0; // byte of the line where the buffered window starts (0-based)
  let lineLen = 0;
  let found: { column: number; text: string; textColumn: number; whole: boolean } | undefined;
  let windowedLine = false;

  const test = (buf: Buffer, lineEnded: boolean) => {
    const str = buf.toString("utf8");
    const m = spec.regex.exec(str);
    if (!m) return;
    const at = Buffer.byteLength(str.slice(0, m.index));
    if (lineEnded && windowStart === 0 && buf.length <= SHOW_BYTES) {
      found = { column: at + 1, text: str, textColumn: 1, whole: true };
      return;
    }
    const shown = textOf(buf, at - SHOW_BEFORE, at - SHOW_BEFORE + SHOW_BYTES);
    found = {
      column: windowStart + at + 1,
      text: shown.text,
      textColumn: windowStart + shown.from + 1,
      whole: false,
    };
  };
  const endLine = (l: number) => {
    if (found) {
      result.total++;
      if (l < req.offset) result.before++;
      else if (result.next === undefined) {
        const cost = Buffer.byteLength(found.text) + 16;
        if (
          result.matches.length < req.limit &&
          (listedBytes + cost <= req.maxBytes || !result.matches.length)
        ) {
          result.matches.push({ line: l, lineBytes: lineLen, ...found });
          listedBytes += cost;
        } else result.next = l;
      }
    }
    if (windowedLine) result.windowed++;
  };

  await scanLines(file, 0, index.size, 1, (l, piece, ends) => {
    if (l !== line) {
      line = l;
      parts = [];
      partsLen = 0;
      windowStart = 0;
      lineLen = 0;
      found = undefined;
      windowedLine = false;
    }
    lineLen += piece.length;
    if (!found && ends && partsLen === 0 && piece.length <= SEARCH_WINDOW) test(piece, true);
    else if (!found) {
      let data = piece;
      while (partsLen + data.length > SEARCH_WINDOW) {
        const take = SEARCH_WINDOW - partsLen;
        parts.push(data.subarray(0, take));
        data = data.subarray(take);
        const window = Buffer.concat(parts);
        windowedLine = true;
        test(window, false);
        if (found) break;
        const keep = window.subarray(window.length - SEARCH_OVERLAP);
        windowStart += window.length - keep.length;
        parts = [Buffer.from(keep)];
        partsLen = keep.length;
      }
      if (!found) {
        parts.push(Buffer.from(data));
        partsLen += data.length;
        if (ends) test(Buffer.concat(parts), true);
      }
    }
    if (ends) endLine(l);
    return true;
  });
  return result;
}
