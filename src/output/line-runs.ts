/**
 * Runs: consecutive whole lines of a cell's view kept as one string (a flood of short lines costs
 * a few strings, not one object per line), or one long line kept as its first characters. They are
 * split into lines only when a view is rendered, and then only as many as a share can show.
 */
import type { ViewLine } from "./select.js";

export interface Run {
  /** Line number (1-based, in the cell's view) of the first line. */
  n: number;
  count: number;
  /** The lines, each followed by a break (a long line: its first characters, then a break). */
  text: string;
  /** UTF-8 bytes of `text`. */
  stored: number;
  important: boolean;
  /** Set for one line longer than what is kept: its whole length (UTF-16 units) and bytes. */
  long?: { chars: number; bytes: number };
}

export function runLines(run: Run): ViewLine[] {
  const { important } = run;
  if (run.long) {
    const text = run.text.slice(0, -1);
    return [{ n: run.n, text, chars: run.long.chars, bytes: run.long.bytes, stored: run.stored, important }];
  }
  const out: ViewLine[] = [];
  let from = 0;
  for (let n = run.n; from < run.text.length; n++) {
    const nl = run.text.indexOf("\n", from);
    const text = run.text.slice(from, nl);
    const bytes = Buffer.byteLength(text) + 1;
    out.push({ n, text, chars: text.length, bytes, stored: bytes, important });
    from = nl + 1;
  }
  return out;
}

/** Lines from the front of `runs` covering at least `budget` bytes (whole runs). */
export function linesFromFront(runs: readonly Run[], budget: number): ViewLine[] {
  const out: ViewLine[] = [];
  let bytes = 0;
  for (const run of runs) {
    if (bytes >= budget) break;
    out.push(...runLines(run));
    bytes += run.stored;
  }
  return out;
}

/** Lines from the back of `runs` covering at least `budget` bytes (whole runs), in order. */
export function linesFromBack(runs: readonly Run[], budget: number): ViewLine[] {
  const picked: Run[] = [];
  let bytes = 0;
  for (let i = runs.length - 1; i >= 0 && bytes < budget; i--) {
    picked.push(runs[i]);
    bytes += runs[i].stored;
  }
  return picked.reverse().flatMap(runLines);
}

/** Merges `run` into `last` (consecutive short lines of the same kind, within `maxRun` bytes). */
export function mergeInto(last: Run, run: Run, maxRun: number): boolean {
  if (last.long || run.long || last.important !== run.important) return false;
  if (last.n + last.count !== run.n || last.stored + run.stored > maxRun) return false;
  last.text += run.text;
  last.count += run.count;
  last.stored += run.stored;
  return true;
}

export function countLines(runs: readonly Run[]): number {
  let n = 0;
  for (const r of runs) n += r.count;
  return n;
}

/** The first `k` lines of a multi-line run, and the rest. */
function splitRun(run: Run, k: number): [Run, Run] {
  let at = 0;
  for (let i = 0; i < k; i++) at = run.text.indexOf("\n", at) + 1;
  const a = run.text.slice(0, at);
  const b = run.text.slice(at);
  const aBytes = Buffer.byteLength(a);
  return [
    { ...run, count: k, text: a, stored: aBytes },
    { ...run, n: run.n + k, count: run.count - k, text: b, stored: run.stored - aBytes },
  ];
}

/**
 * `runs` (in line order) cut around lines [from, end): the runs before, the runs after, and the line
 * after the last one before (`before`; 1 when none is).
 */
export function splitRuns(runs: readonly Run[], from: number, end: number) {
  const front: Run[] = [];
  const back: Run[] = [];
  for (const run of runs) {
    let rest: Run | undefined = run;
    if (rest.n < from) {
      if (rest.n + rest.count <= from) {
        front.push(rest);
        continue;
      }
      const [a, b] = splitRun(rest, from - rest.n);
      front.push(a);
      rest = b;
    }
    if (rest.n + rest.count <= end) continue;
    if (rest.n < end) rest = splitRun(rest, end - rest.n)[1];
    back.push(rest);
  }
  const last = front[front.length - 1];
  return { front, back, before: last ? last.n + last.count : 1 };
}

/** The first `max` UTF-16 units of `text`, never splitting a surrogate pair. */
export function prefixChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && (text.charCodeAt(max - 1) & 0xfc00) === 0xd800 ? max - 1 : max;
  return text.slice(0, end);
}

/**
 * Cuts `text` (whole lines, each ending in a break) from offset `from` on into runs of whole lines
 * of at most `maxRun` characters, the first numbered `first`; a line longer than `keep` is a run of
 * its own holding its first `keep` characters. Each run goes to `emit` in order.
 */
export function eachTextRun(
  text: string,
  from: number,
  first: number,
  limits: { maxRun: number; keep: number },
  important: boolean,
  emit: (run: Run) => void,
): void {
  let n = first;
  let runStart = from;
  let runN = n;
  const flush = (end: number) => {
    if (end <= runStart) return;
    const chunk = text.slice(runStart, end);
    emit({ n: runN, count: n - runN, text: chunk, stored: Buffer.byteLength(chunk), important });
  };
  while (from < text.length) {
    const nl = text.indexOf("\n", from);
    if (nl - from > limits.keep) {
      flush(from);
      const raw = text.slice(from, nl);
      const kept = prefixChars(raw, limits.keep);
      emit({
        n,
        count: 1,
        text: `${kept}\n`,
        stored: Buffer.byteLength(kept) + 1,
        important,
        long: { chars: raw.length, bytes: Buffer.byteLength(raw) + 1 },
      });
      n++;
      from = nl + 1;
      runStart = from;
      runN = n;
      continue;
    }
    if (nl + 1 - runStart > limits.maxRun && from > runStart) {
      flush(from);
      runStart = from;
      runN = n;
    }
    n++;
    from = nl + 1;
  }
  flush(from);
}

/** `text`'s runs (see eachTextRun), the first line numbered `first`. */
export function textRuns(
  text: string,
  first: number,
  maxRun: number,
  keep: number,
  important: boolean,
): Run[] {
  const runs: Run[] = [];
  eachTextRun(text, 0, first, { maxRun, keep }, important, (run) => runs.push(run));
  return runs;
}

/** A growing queue of runs that drops from the front (array shifts would be quadratic). */
export class RunQueue {
  private items: Run[] = [];
  private start = 0;
  bytes = 0;

  static of(runs: Run[]): RunQueue {
    const q = new RunQueue();
    for (const r of runs) q.push(r);
    return q;
  }

  get length(): number {
    return this.items.length - this.start;
  }

  last(): Run | undefined {
    return this.length > 0 ? this.items[this.items.length - 1] : undefined;
  }

  push(run: Run): void {
    this.items.push(run);
    this.bytes += run.stored;
  }

  /** Appends `run`, merged into the last run when both are short lines of the same kind. */
  pushMerging(run: Run, maxRun: number): void {
    if (this.length > 0 && mergeInto(this.items[this.items.length - 1], run, maxRun)) {
      this.bytes += run.stored;
      return;
    }
    this.push(run);
  }

  /** Drops runs from the front while the rest still hold `keep` bytes. */
  trim(keep: number): void {
    while (this.length > 1 && this.bytes - this.items[this.start].stored >= keep) {
      this.bytes -= this.items[this.start].stored;
      this.start++;
    }
    if (this.start > 64 && this.start * 2 > this.items.length) {
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
  }

  forEach(fn: (run: Run) => void): void {
    for (let i = this.start; i < this.items.length; i++) fn(this.items[i]);
  }

  list(): Run[] {
    return this.items.slice(this.start);
  }
}
