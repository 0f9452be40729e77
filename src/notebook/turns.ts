/**
 * Writers of one notebook take turns within this process, in the order they came
 * (docs/notebook-tool.md, "Parallel calls"): an agent that issues parallel tool calls on one file gets
 * every one of them done, each on the file as the one before left it, instead of all but one refused
 * as "changed on disk since it was read". Across processes the file lock and the on-disk check before
 * each save still decide.
 */
import { realpathSync } from "node:fs";
import { resolve } from "node:path";

const tails = new Map<string, Promise<void>>();

/**
 * The notebook's turn key: its real path, or the path as given while it does not exist yet. Found
 * synchronously, so calls take their turns in the order they were made (an await here would let a
 * later call overtake an earlier one).
 */
export function fileTurnKey(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** Runs `fn` once every earlier call on `key` in this process has finished (whatever its outcome). */
export async function inFileTurn<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const before = tails.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => {
    release = r;
  });
  const tail = before.then(() => mine);
  tails.set(key, tail);
  try {
    await before;
    return await fn();
  } finally {
    release();
    if (tails.get(key) === tail) tails.delete(key);
  }
}
