/**
 * What the model last saw of each notebook (docs/notebook-tool.md, "Indices between calls"): one
 * tool object — one CLI call or batch, one MCP session — remembers, per file, the cells (id, type,
 * source) as its last call on that file left them. A later call that addresses cells by index on a
 * file another writer (another program, another session) changed since is checked against that
 * memory: when the index no longer names the cell (or place) the model saw there, the call is
 * refused with what changed; when it still does, it goes ahead and the result says what changed.
 * Outputs, execution counts and metadata are not compared: a run's saves (this host's or another's)
 * change only those, and they do not move indices.
 */
import { type Cell, cellSource, type Notebook } from "../../notebook/index.js";
import type { NotebookParams } from "./params.js";

/** One cell as seen: how it is matched again (its id, else its content) and how it is named. */
export interface SeenCell {
  /** `id:<id>`, or for a cell without an id `src:<content>` (an edit of it reads as delete + insert). */
  key: string;
  id?: string;
  type: string;
  /**
   * Its type and source (`code\0x = 1`): an edit changes it. The text itself, not a hash of it: a
   * notebook's sources are a small part of it (outputs are not kept), and a short command then loads
   * no hashing (src/sys/crypto.ts).
   */
  content: string;
  /** The first line of its source, for the texts. */
  head: string;
}

export type SeenCells = SeenCell[];

/** The cells of `nb` as a call leaves them (what its result showed the model). */
export function seenCells(nb: Notebook): SeenCells {
  return nb.cells.map((cell) => seenCell(cell));
}

function seenCell(cell: Cell): SeenCell {
  const source = cellSource(cell);
  const content = `${cell.cell_type}\0${source}`;
  const id = typeof cell.id === "string" && cell.id ? cell.id : undefined;
  return {
    key: id ? `id:${id}` : `src:${content}`,
    id,
    type: cell.cell_type,
    content,
    head: firstLine(source),
  };
}

/** `"x = 1"` (the first non-empty line, cut at 60 characters), or `empty`. */
export function firstLine(source: string): string {
  const line = source.split("\n").find((l) => l.trim() !== "");
  if (line === undefined) return "empty";
  const cut = line.length > 60 ? `${line.slice(0, 60)}…` : line;
  return JSON.stringify(cut);
}

/** How the cells changed between two views of the file. */
interface CellChanges {
  /** For each seen index, its index now (undefined: deleted). */
  now: (number | undefined)[];
  /** Current indices of cells that were not seen. */
  inserted: number[];
  /** Seen indices of cells whose source or type changed (same id). */
  edited: number[];
  /** Seen indices of cells that changed places relative to the others. */
  moved: number[];
  /** Anything at all (inserted, deleted, edited, moved). */
  any: boolean;
  /** Cells were inserted, deleted or moved: indices may name other cells. */
  structural: boolean;
}

function compare(seen: SeenCells, current: SeenCells): CellChanges {
  // Match by key, the k-th seen occurrence of a key with its k-th occurrence now.
  const slots = new Map<string, number[]>();
  current.forEach((c, j) => {
    slots.set(c.key, [...(slots.get(c.key) ?? []), j]);
  });
  const now = seen.map((c) => slots.get(c.key)?.shift());
  const matched = new Set(now.filter((j): j is number => j !== undefined));
  const inserted = current.map((_, j) => j).filter((j) => !matched.has(j));
  const edited = seen
    .map((_, i) => i)
    .filter((i) => now[i] !== undefined && seen[i].content !== current[now[i]!].content);
  const keep = increasing(
    seen.map((_, i) => i).filter((i) => now[i] !== undefined),
    now as number[],
  );
  const moved = seen.map((_, i) => i).filter((i) => now[i] !== undefined && !keep.has(i));
  const deleted = now.some((j) => j === undefined);
  const structural = deleted || inserted.length > 0 || moved.length > 0;
  return { now, inserted, edited, moved, any: structural || edited.length > 0, structural };
}

/** The largest set of `order` whose `at` values increase (a longest increasing subsequence). */
function increasing(order: number[], at: number[]): Set<number> {
  const tails: number[] = [];
  const prev = new Map<number, number | undefined>();
  for (const i of order) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at[tails[mid]] < at[i]) lo = mid + 1;
      else hi = mid;
    }
    prev.set(i, lo > 0 ? tails[lo - 1] : undefined);
    tails[lo] = i;
  }
  const out = new Set<number>();
  for (let i: number | undefined = tails[tails.length - 1]; i !== undefined; i = prev.get(i)) out.add(i);
  return out;
}

/** "code, id 1a2b3c4d, "x = 1"" — a cell named by what it is. */
function what(c: SeenCell): string {
  return `${c.type}${c.id ? `, id ${c.id}` : ""}, ${c.head}`;
}

const MAX_CHANGES = 8;

/** The changes in words: "1 cell was inserted at index 0 (code, id 9f…, "import time"); …". */
function changeList(seen: SeenCells, current: SeenCells, ch: CellChanges): string {
  const parts: string[] = [];
  // Inserted cells in runs of neighbours: "2 cells were inserted at indices 1-2 (…; …)".
  for (let k = 0; k < ch.inserted.length; ) {
    let end = k;
    while (end + 1 < ch.inserted.length && ch.inserted[end + 1] === ch.inserted[end] + 1) end++;
    const run = ch.inserted.slice(k, end + 1);
    parts.push(
      run.length === 1
        ? `a cell was inserted at index ${run[0]} (${what(current[run[0]])})`
        : `${run.length} cells were inserted at indices ${run[0]}-${run[run.length - 1]} (${run
            .slice(0, 3)
            .map((j) => what(current[j]))
            .join("; ")}${run.length > 3 ? `; and ${run.length - 3} more` : ""})`,
    );
    k = end + 1;
  }
  seen.forEach((c, i) => {
    if (ch.now[i] === undefined) parts.push(`the cell you saw at index ${i} (${what(c)}) was deleted`);
  });
  for (const i of ch.moved)
    parts.push(`the cell you saw at index ${i} (${what(seen[i])}) was moved to index ${ch.now[i]}`);
  for (const i of ch.edited) {
    const j = ch.now[i]!;
    parts.push(
      `cell ${j}${seen[i].id ? ` (id ${seen[i].id})` : ""} was edited (its source now begins ${current[j].head})`,
    );
  }
  const shown = parts.slice(0, MAX_CHANGES);
  if (parts.length > MAX_CHANGES)
    shown.push(`${parts.length - MAX_CHANGES} more changes (read the notebook to see them)`);
  return shown.join("; ");
}

/** What a call finds when it compares the file with what the model last saw of it. */
export interface Staleness {
  /** The call is refused with this text (the file is left as it is). */
  refusal?: string;
  /** The call goes ahead; its result ends with this note. */
  note?: string;
}

/**
 * Checks a call against what the model last saw (`seen`) of the file as it is now (`current`):
 * undefined when nothing it addresses changed. Only index-addressed targets can be refused — a
 * cell_id names the same cell wherever it went — and a move's to_index, which is an index too.
 */
export function staleness(
  params: NotebookParams,
  seen: SeenCells,
  current: SeenCells,
  shownPath: string,
): Staleness | undefined {
  const ch = compare(seen, current);
  if (!ch.any) return undefined;
  const changed = `${shownPath} changed since your last call on it (another program or session wrote it): ${changeList(seen, current, ch)}.`;
  const refuse = (why: string, detail: string, todo: string) => ({
    refusal: `${why}: ${changed}${detail ? ` ${detail}` : ""} Nothing was changed; ${todo}`,
  });
  const action = params.action;
  const index = params.cell_index;
  const byIndex = index !== undefined && params.cell_id === undefined;
  const readAgain = "or read the notebook again.";

  /** Seen index i still names the same cell. */
  const same = (i: number) => i < seen.length && ch.now[i] === i;
  /** Where the cell the model saw at index i is now, and what index i holds now. */
  const moved = (i: number): string => {
    const j = i < seen.length ? ch.now[i] : undefined;
    // A deleted cell is in the list of changes already.
    const was =
      i >= seen.length
        ? `Your last call on it showed no cell at index ${i}. `
        : j === undefined
          ? ""
          : `The cell you saw at index ${i} (${what(seen[i])}) is now at index ${j}. `;
    const c = current[i];
    const holds = c
      ? `Index ${i} now holds a ${c.type} cell${c.id ? ` (id ${c.id})` : ""}: ${c.head}.`
      : `Index ${i} is now past the last cell (${current.length} cells).`;
    return `${was}${holds}`;
  };
  /** Where to point the call now: the seen cell's id (or new index), or a fresh read. */
  const redirect = (i: number): string => {
    const j = i < seen.length ? ch.now[i] : undefined;
    if (j === undefined) return `read the notebook again.`;
    const id = seen[i].id;
    return id
      ? `for the cell you saw, use cell_id "${id}" (or cell_index ${j}), ${readAgain}`
      : `for the cell you saw, use cell_index ${j}, ${readAgain}`;
  };

  if (action === "move" && ch.structural) {
    return refuse(
      `to_index ${params.to_index} may no longer be the place you meant`,
      "",
      "read the notebook again and redo the move (a cell_id keeps naming its cell wherever it is).",
    );
  }
  if (byIndex && action === "insert") {
    // The new cell goes between the cells the model saw at index-1 and index: both must be there
    // still. The top stays the top whatever came above; the end is the end while index still is.
    const top = index === 0;
    const end = index === seen.length && index === current.length;
    const between = index > 0 && index < seen.length && same(index - 1) && same(index);
    if (!(top || end || between)) {
      // Where the cell it was to go before went (or, for an append, what is at the index now).
      return refuse(
        `cell_index ${index} may no longer be the place you meant`,
        moved(index),
        `insert by the cells as they are now (with cell_id the new cell goes before that cell), ${readAgain}`,
      );
    }
  } else if (byIndex && action !== "read") {
    const last = action === "run" ? (params.to_index ?? index) : index;
    for (let i = index; i <= last; i++) {
      if (!same(i)) {
        return refuse(`cell_index ${i} no longer names the cell you saw there`, moved(i), redirect(i));
      }
      if ((action === "edit" || action === "delete") && ch.edited.includes(i)) {
        return refuse(
          `cell ${i}${seen[i].id ? ` (id ${seen[i].id})` : ""} was changed since you saw it`,
          "",
          `read it again (cell_index ${i}) and redo the ${action} if it still applies.`,
        );
      }
    }
  } else if (action === "run" && (params.cell_range || params.to_index !== undefined)) {
    // A range by indices (cell_range, or cell_id .. to_index): every cell in it as the model saw it.
    const from = params.cell_id !== undefined ? current.findIndex((c) => c.id === params.cell_id) : -1;
    const [first, last] = params.cell_range ?? [Math.max(0, from), params.to_index!];
    for (let i = first; i <= last; i++) {
      if (!same(i)) {
        const named = params.cell_range ? `cell_range [${first}, ${last}]` : `to_index ${last}`;
        return refuse(
          `${named} no longer names the cells you saw there`,
          moved(i),
          "read the notebook again.",
        );
      }
    }
  }
  if (action === "read") return undefined;
  return { note: `Note: ${changed} The indices in this result are the file's as it is now.` };
}
