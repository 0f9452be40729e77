/**
 * The lock held while one process starts (or stops) the shared local gateway, so that two
 * processes racing start ONE server (docs/backends.md, "Shared local gateway"). A lock file of
 * src/sys/lock-file.ts: a lock left by a process that died, or whose pid has been reused, is stale
 * and taken over.
 */
import { acquireLockFile, LockFileTimeoutError } from "../../sys/lock-file.js";

export interface LockWait {
  /** Give up waiting for a live holder after this long (ms). */
  timeoutMs: number;
}

/** Why acquireLock gave up: a live holder kept the lock for the whole wait. */
export class LockTimeoutError extends Error {
  constructor(
    readonly file: string,
    readonly holder: number,
    waitedMs: number,
  ) {
    super(
      `another process (pid ${holder}) has held ${file} for ${Math.round(waitedMs / 1000)} s while starting or stopping the shared local gateway; try again, or remove the file if that process is stuck`,
    );
  }
}

/** Takes the lock, waiting while a live holder has it. Resolves to a release function. */
export async function acquireLock(file: string, wait: LockWait): Promise<() => void> {
  try {
    const held = await acquireLockFile(file, { timeoutMs: wait.timeoutMs, maxPollMs: 100 });
    return () => held.release();
  } catch (e) {
    if (e instanceof LockFileTimeoutError) throw new LockTimeoutError(file, e.holder?.pid ?? 0, e.waitedMs);
    throw e;
  }
}
