/**
 * A lock file held while one process starts (or stops) the shared local gateway, so that two
 * processes racing start ONE server (docs/backends.md, "Shared local gateway"). The file holds the
 * holder's pid and its start time (from /proc), so a lock left by a process that died — or whose pid
 * has been reused — is recognised as stale and taken over.
 */
import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { processAlive, processStartTicks } from "./process-info.js";

interface LockContent {
  pid: number;
  /** The holder's start time in clock ticks since boot (/proc/<pid>/stat field 22), when known. */
  ticks?: number;
  at: number;
}

export interface LockWait {
  /** Give up waiting for a live holder after this long (ms). */
  timeoutMs: number;
  /** Called while waiting (a place for the caller to check whether what it waits for has appeared). */
  onWait?: () => Promise<boolean>;
  pollMs?: number;
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

function readLock(file: string): LockContent | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as LockContent;
    return typeof parsed.pid === "number" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A holder that is gone, or a pid now used by another process (different start time). */
function isStale(content: LockContent | undefined, file: string): boolean {
  if (!content) {
    // Unreadable: being written right now (young) or a torn file from a crash (old).
    try {
      return Date.now() - statSync(file).mtimeMs > 5000;
    } catch {
      return false;
    }
  }
  if (!processAlive(content.pid)) return true;
  const ticks = processStartTicks(content.pid);
  return content.ticks !== undefined && ticks !== undefined && ticks !== content.ticks;
}

/**
 * Removes a stale lock without removing a fresh one another process made meanwhile: the file is
 * moved aside atomically, and put back when it turns out not to be the one judged stale.
 */
function breakStaleLock(file: string, staleIno: number): void {
  const aside = `${file}.${process.pid}.stale`;
  try {
    renameSync(file, aside);
  } catch {
    return; // someone else broke it first
  }
  try {
    if (statSync(aside).ino !== staleIno) {
      try {
        linkSync(aside, file);
      } catch {
        /* a newer lock exists again; the one moved aside is lost, its holder will still finish */
      }
    }
  } finally {
    try {
      unlinkSync(aside);
    } catch {
      /* gone */
    }
  }
}

/**
 * Takes the lock, waiting while a live holder has it. Resolves to a release function, or to
 * `undefined` when `onWait` reported that waiting is no longer needed.
 */
export async function acquireLock(file: string, wait: LockWait): Promise<(() => void) | undefined> {
  const started = Date.now();
  const pollMs = wait.pollMs ?? 100;
  for (;;) {
    let fd: number | undefined;
    try {
      fd = openSync(file, "wx", 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    if (fd !== undefined) {
      const content: LockContent = {
        pid: process.pid,
        ticks: processStartTicks(process.pid),
        at: Date.now(),
      };
      try {
        writeSync(fd, JSON.stringify(content));
      } finally {
        closeSync(fd);
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (readLock(file)?.pid === process.pid) {
          try {
            unlinkSync(file);
          } catch {
            /* gone */
          }
        }
      };
    }
    let ino: number | undefined;
    try {
      ino = statSync(file).ino;
    } catch {
      continue; // released between our open and stat: try again at once
    }
    const content = readLock(file);
    if (isStale(content, file)) {
      breakStaleLock(file, ino);
      continue;
    }
    if (wait.onWait && (await wait.onWait())) return undefined;
    const waited = Date.now() - started;
    if (waited > wait.timeoutMs) throw new LockTimeoutError(file, content?.pid ?? 0, waited);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
