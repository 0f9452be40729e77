/**
 * A short-lived exclusive lock next to a file, held only around "check the file is unchanged, then
 * rename the new version over it", so two nbagent processes saving the same notebook cannot both
 * pass the check. The lock is `.<name>.nbagent-lock`, a lock file of src/sys/lock-file.ts (owner,
 * stale detection and takeover are described there). Rules: docs/notebook-tool.md ("Files").
 */
import { basename, dirname, join } from "node:path";
import { LockFileTimeoutError, withLockFile } from "../sys/lock-file.js";
import { HOST } from "../sys/proc.js";

export class LockTimeoutError extends Error {}

export function lockPathFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.nbagent-lock`);
}

/** Runs `fn` while holding the lock for `file`; waits up to `timeoutMs` for another holder. */
export async function withFileLock<T>(file: string, fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const path = lockPathFor(file);
  try {
    return await withLockFile(path, fn, { timeoutMs });
  } catch (e) {
    if (!(e instanceof LockFileTimeoutError)) throw e;
    const owner = e.holder;
    const who = owner ? ` (pid ${owner.pid}${owner.host === HOST ? "" : ` on ${owner.host}`})` : "";
    throw new LockTimeoutError(`another process${who} is saving this notebook (lock ${path})`);
  }
}
