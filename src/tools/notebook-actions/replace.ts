/**
 * replace: changes exact text within one cell's source — `old` → `new`, once (the match must be
 * unique) or at every match with `all: true` — so a model can change one line of a long cell without
 * sending the whole cell again (docs/notebook-tool.md, "replace"). No match: the closest line is named.
 */
import { cellSource, setCellSource, thawCell } from "../../notebook/index.js";
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
  if (best < 0 || bestScore < 0.3)
    return `${head} No line of the cell is close to it; read the cell (cell_index ${index}) to see its source.`;
  const shown = lines[best].length > 200 ? `${lines[best].slice(0, 200)}…` : lines[best];
  return `${head} The closest line is line ${best + 1}: ${JSON.stringify(shown)}.`;
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
