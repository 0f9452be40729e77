/**
 * replace: changes exact text within one cell's source — `old` → `new`, once (the match must be
 * unique) or at every match with `all: true` — so a model can change one line of a long cell without
 * sending the whole cell again (docs/notebook-tool.md, "replace"). No match: the closest line is named.
 */
import { cellSource, setCellSource, thawCell } from "../../../notebook/index.js";
import {
  type ActionHandler,
  cellDetails,
  cellTag,
  nowHas,
  ok,
  save,
  ToolError,
  targetIndex,
  thenRun,
} from "./context.js";

export const replace: ActionHandler = async (ctx) => {
  const { params: p, loaded, shownPath } = ctx;
  const index = targetIndex(ctx)!;
  const old = p.old!;
  const source = cellSource(loaded.notebook.cells[index]);
  const at = matches(source, old);
  if (at.length === 0) throw new ToolError(noMatchText(source, old, index, shownPath));
  if (at.length > 1 && p.all !== true) {
    throw new ToolError(
      `old occurs ${at.length} times in cell ${index} of ${shownPath} (${lineList(source, at)}); nothing was changed. Give old with enough surrounding text to match once, or pass all: true to replace every occurrence.`,
    );
  }
  const replaced = p.all === true ? source.split(old).join(p.new!) : source.replace(old, () => p.new!);
  const cell = thawCell(loaded.notebook, index);
  setCellSource(cell, replaced);
  await save(ctx);
  const n = p.all === true ? at.length : 1;
  const text = `Replaced ${n === 1 ? "1 occurrence" : `${n} occurrences`} in cell ${index} (${cellTag(cell)}; ${lineList(source, at.slice(0, n))} of its source before the change). ${nowHas(ctx)}`;
  const result = ok(text, cellDetails(ctx, index, cell, replaced));
  return thenRun(ctx, result, index);
};

/** Start offsets of the non-overlapping occurrences of `needle`, left to right. */
function matches(haystack: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

/** "line 4", "lines 4, 9 and 15" (1-based lines of the source where each match starts). */
function lineList(source: string, offsets: number[]): string {
  const lines = [...new Set(offsets.map((o) => source.slice(0, o).split("\n").length))];
  if (lines.length === 1) return `line ${lines[0]}`;
  return `lines ${lines.slice(0, -1).join(", ")} and ${lines[lines.length - 1]}`;
}

/** Why nothing matched, with the line of the cell that comes closest to old's first line. */
function noMatchText(source: string, old: string, index: number, shownPath: string): string {
  const head = `No match for old in cell ${index} of ${shownPath}; nothing was changed.`;
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  const lines = source.split("\n");
  if (squash(source).includes(squash(old)) && squash(old) !== "") {
    return `${head} It matches if spaces, tabs and line breaks are ignored: copy old from the cell's source exactly (read with cell_index ${index} shows it), indentation included.`;
  }
  const want = squash(old.split("\n").find((l) => l.trim() !== "") ?? old);
  let best = -1;
  let bestScore = 0;
  lines.forEach((line, i) => {
    const score = similarity(want, squash(line));
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  // old is often part of a line (`resample("ME")` in `df.resample('ME').sum()`): the span of a line
  // with the fewest edits from it, when that is a part of the line and closer than any whole line.
  const span = closestSpan(lines, want);
  if (span && span.score >= 0.6 && span.score > bestScore && span.text !== lines[span.line].trim()) {
    const line = lines[span.line];
    const shownLine = line.length > 200 ? `${line.slice(0, 200)}…` : line;
    return `${head} The closest text is on line ${span.line + 1}, column ${span.column + 1}: ${JSON.stringify(span.text)} (the line: ${JSON.stringify(shownLine)}).`;
  }
  if (best < 0 || bestScore < 0.3)
    return `${head} No line of the cell is close to it; read the cell (cell_index ${index}) to see its source.`;
  const shown = lines[best].length > 200 ? `${lines[best].slice(0, 200)}…` : lines[best];
  return `${head} The closest line is line ${best + 1}: ${JSON.stringify(shown)}.`;
}

/**
 * The span of a line with the fewest edits (insertions, deletions, substitutions) from `want`, by
 * approximate matching (each line a text in which `want` may start anywhere): score 1 - edits /
 * want's length. Bounded work: `want` cut at 200 characters, lines at 1,000, and lines past a budget
 * of 20 million steps (a 100,000-character cell for a 200-character `want`) are not looked at.
 */
function closestSpan(
  lines: string[],
  want: string,
): { line: number; column: number; text: string; score: number } | undefined {
  const a = want.slice(0, 200);
  if (a.length < 3) return undefined;
  let found: { line: number; column: number; text: string; score: number } | undefined;
  let budget = 20_000_000;
  lines.forEach((full, li) => {
    const t = full.slice(0, 1000);
    budget -= a.length * t.length;
    if (budget < 0) return;
    // prev/cur: edits of a[0..i) against a span of t ending at j; from: where that span starts.
    let prev = new Array<number>(t.length + 1).fill(0);
    let prevFrom = Array.from({ length: t.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const cur = new Array<number>(t.length + 1);
      const curFrom = new Array<number>(t.length + 1);
      cur[0] = i;
      curFrom[0] = 0;
      for (let j = 1; j <= t.length; j++) {
        const sub = prev[j - 1] + (a[i - 1] === t[j - 1] ? 0 : 1);
        const del = prev[j] + 1;
        const ins = cur[j - 1] + 1;
        if (sub <= del && sub <= ins) {
          cur[j] = sub;
          curFrom[j] = prevFrom[j - 1];
        } else if (del <= ins) {
          cur[j] = del;
          curFrom[j] = prevFrom[j];
        } else {
          cur[j] = ins;
          curFrom[j] = curFrom[j - 1];
        }
      }
      prev = cur;
      prevFrom = curFrom;
    }
    for (let j = 1; j <= t.length; j++) {
      const score = 1 - prev[j] / a.length;
      const text = t.slice(prevFrom[j], j).trim();
      // Equal edits: the span as long as old is the likelier one (old's closing quote kept).
      const closer =
        found !== undefined &&
        score === found.score &&
        Math.abs(text.length - a.length) < Math.abs(found.text.length - a.length);
      if (text && (!found || score > found.score || closer))
        found = { line: li, column: t.indexOf(text, prevFrom[j]), text, score };
    }
  });
  return found;
}

/** Dice coefficient of the two strings' character bigrams (0: nothing alike, 1: the same). */
function similarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const grams = new Map<string, number>();
  for (let i = 0; i < a.length - 1; i++) {
    const g = a.slice(i, i + 2);
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  let shared = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.slice(i, i + 2);
    const n = grams.get(g) ?? 0;
    if (n > 0) {
      shared++;
      grams.set(g, n - 1);
    }
  }
  return (2 * shared) / (a.length - 1 + b.length - 1);
}
