/**
 * Which lines of a cell's view fit its share of the budget (docs/output.md): all of them when they
 * fit; else its important lines (latest first, within the reserved part), then a head (about 40%)
 * and a tail (the rest), and what the tail leaves goes back to the head. A line longer than what
 * is left is cut on a UTF-8 boundary: the first and the last line always (they show at least a
 * little), a line further in when it could never fit whole and a useful part of it can.
 */

export interface ViewLine {
  /** 1-based line number within the cell's view. */
  n: number;
  /** The line without its break (its first characters when it is very long). */
  text: string;
  /** Length of the whole line in UTF-16 code units. */
  chars: number;
  /** UTF-8 bytes of the whole line, its break included. */
  bytes: number;
  /** UTF-8 bytes of `text` with a break: what showing it costs. */
  stored: number;
  /** A traceback or notice line. */
  important: boolean;
}

export interface ShownLine {
  n: number;
  text: string;
  /** Characters of the line not shown (0: shown whole). */
  cutChars: number;
}

/** The runs of line numbers a view shows, e.g. [[1, 20], [39981, 40000]]: a gap is a cut. */
export function shownRanges(shown: readonly ShownLine[]): [number, number][] {
  const ranges: [number, number][] = [];
  for (const { n } of shown) {
    const last = ranges[ranges.length - 1];
    if (last && last[1] + 1 === n) last[1] = n;
    else ranges.push([n, n]);
  }
  return ranges;
}

export interface LineSource {
  /** Lines 1..h (the first ones kept). */
  head: ViewLine[];
  /** Lines t..lines (contiguous; the last ones kept). */
  tail: ViewLine[];
  /** Important lines (also those the head or tail left out). */
  marks: ViewLine[];
  lines: number;
  bytes: number;
  /** head and tail hold every line of the view. */
  complete: boolean;
}

/** Share of the unreserved budget a head gets first. */
const HEAD_PART = 0.4;
/** A cut line shows at least this many bytes, however small the share. */
const MIN_CUT = 16;
/** A long line inside a head or tail is cut only when at least this much is left for it. */
const MIN_PART = 256;

function whole(line: ViewLine): ShownLine {
  return { n: line.n, text: line.text, cutChars: line.chars - line.text.length };
}

/** `line` cut to cost at most `budget` bytes (never under MIN_CUT); its cost. */
function cut(line: ViewLine, budget: number): [ShownLine, number] {
  const max = Math.max(MIN_CUT, budget - 1);
  const buf = Buffer.from(line.text);
  let end = Math.min(max, buf.length);
  while (end > 0 && end < buf.length && (buf[end] & 0xc0) === 0x80) end--;
  const text = buf.subarray(0, end).toString("utf8");
  return [{ n: line.n, text, cutChars: line.chars - text.length }, end + 1];
}

function fits(line: ViewLine, budget: number): boolean {
  return line.text.length === line.chars && line.stored <= budget;
}

export function selectLines(src: LineSource, share: number, reserved: number): ShownLine[] {
  const { head, tail, lines, bytes } = src;
  if (src.complete && bytes <= share) return [...head, ...tail].map(whole);
  if (lines === 0 || share <= 0) return [];
  const chosen = new Map<number, ShownLine>();

  // 1. important lines, latest first
  const important = new Map<number, ViewLine>();
  for (const l of [...src.marks, ...head, ...tail]) if (l.important) important.set(l.n, l);
  let left = Math.min(reserved, share);
  for (const line of [...important.values()].sort((a, b) => b.n - a.n)) {
    if (fits(line, left)) {
      chosen.set(line.n, whole(line));
      left -= line.stored;
      continue;
    }
    if (chosen.size === 0 && left > 0) {
      const [shown, cost] = cut(line, left);
      chosen.set(line.n, shown);
      left -= cost;
    }
    break;
  }
  const free = Math.max(0, share - (Math.min(reserved, share) - left));
  const ordered = [...head, ...tail];

  // 2. head: lines 1.. while they fit (line 1 is cut when it does not)
  const pickHead = (budget: number): { picks: ShownLine[]; cost: number } => {
    const picks: ShownLine[] = [];
    let cost = 0;
    for (const [i, line] of ordered.entries()) {
      if (line.n !== i + 1) break; // the middle was not kept
      if (chosen.has(line.n)) continue;
      if (fits(line, budget - cost)) {
        picks.push(whole(line));
        cost += line.stored;
        continue;
      }
      // line 1 always shows; a line that could never fit is cut to what is left
      if (line.n === 1 || (line.bytes > budget && budget - cost >= MIN_PART)) {
        const [shown, c] = cut(line, budget - cost);
        picks.push(shown);
        cost += c;
      }
      break;
    }
    return { picks, cost };
  };
  let first = pickHead(Math.floor(free * HEAD_PART));
  const headN = new Set(first.picks.map((p) => p.n));

  // 3. tail: the last lines, back to the head (the last line is cut when it does not fit)
  let tailCost = 0;
  let tailPicked = 0;
  for (let i = ordered.length - 1, expected = lines; i >= 0; i--, expected--) {
    const line = ordered[i];
    if (line.n !== expected || headN.has(line.n)) break;
    if (chosen.has(line.n)) continue;
    const budget = free - first.cost - tailCost;
    if (fits(line, budget)) {
      chosen.set(line.n, whole(line));
      tailCost += line.stored;
      tailPicked++;
      continue;
    }
    const tailBudget = free - first.cost;
    if (line.n !== 1 && (tailPicked === 0 || (line.bytes > tailBudget && budget >= MIN_PART))) {
      const [shown, c] = cut(line, budget);
      chosen.set(line.n, shown);
      tailCost += c;
    }
    break;
  }

  // 4. what the tail left goes back to the head
  if (free - first.cost - tailCost > 0) first = pickHead(free - tailCost);
  for (const p of first.picks) chosen.set(p.n, p);
  return [...chosen.values()].sort((a, b) => a.n - b.n);
}
