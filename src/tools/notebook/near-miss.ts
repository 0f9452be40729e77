/**
 * Near misses in notebook tool calls: parameter names and action names models reach for, and the
 * one they most likely meant (an alias, the same letters in another case or spelling, or a typo
 * within two edits). Used by notebook/params.ts for its messages.
 */

/** Keys models send for a parameter under another name. */
export const NEAR_KEYS: Record<string, string> = {
  source: "content",
  code: "content",
  text: "content",
  contents: "content",
  cell_source: "content",
  new_source: "content",
  body: "content",
  index: "cell_index",
  idx: "cell_index",
  cell: "cell_index",
  cell_number: "cell_index",
  cell_num: "cell_index",
  position: "cell_index",
  path: "notebook_path",
  notebook: "notebook_path",
  file: "notebook_path",
  file_path: "notebook_path",
  filepath: "notebook_path",
  filename: "notebook_path",
  nb_path: "notebook_path",
  id: "cell_id",
  type: "cell_type",
  kind: "cell_type",
  to: "to_index",
  target: "to_index",
  target_index: "to_index",
  new_index: "to_index",
  destination: "to_index",
  range: "cell_range",
  cells: "cell_range",
  start: "offset",
  count: "limit",
  timeout_seconds: "timeout",
  kernel_name: "kernel",
  kernelspec: "kernel",
  run: "execute",
  old_string: "old",
  old_text: "old",
  search: "old",
  find: "old",
  new_string: "new",
  new_text: "new",
  replacement: "new",
  replace_all: "all",
};

/** Action names models reach for, and the action that does it. */
export const NEAR_ACTIONS: Record<string, string> = {
  remove: "delete",
  del: "delete",
  rm: "delete",
  add: "insert",
  append: "insert",
  create: "insert",
  new: "insert",
  update: "edit",
  modify: "edit",
  write: "edit",
  set: "edit",
  view: "read",
  show: "read",
  list: "read",
  get: "read",
  cat: "read",
  open: "read",
  reorder: "move",
  mv: "move",
  clear: "clear_outputs",
  clear_output: "clear_outputs",
  execute: "run",
  exec: "run",
  run_cell: "run",
  run_all: "run",
  run_cells: "run",
};

const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, "");

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length];
}

/** The name among `names` that `given` most likely meant, if any. */
export function nearest(
  given: string,
  names: readonly string[],
  aliases: Record<string, string>,
): string | undefined {
  const alias = aliases[given] ?? aliases[given.toLowerCase()] ?? aliases[squash(given)];
  if (alias && names.includes(alias)) return alias;
  const g = squash(given);
  const same = names.find((n) => squash(n) === g);
  if (same) return same;
  if (g.length < 3) return undefined;
  let best: string | undefined;
  let bestDistance = 3;
  for (const n of names) {
    const d = distance(g, squash(n));
    if (d < bestDistance) [best, bestDistance] = [n, d];
  }
  return best;
}
