/**
 * A short-lived exclusive lock next to a file (`.<name>.nbagent-lock`, created with O_EXCL), held
 * only around "check the file is unchanged, then rename the new version over it", so two nbagent
 * processes saving the same notebook cannot both pass the check. A lock whose owner process is gone
 * (same host) or that is older than STALE_MS is taken over.
 */
import { randomBytes } from "node:crypto";
import { link, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

const STALE_MS = 30_000;

export class LockTimeoutError extends Error {}

interface LockInfo {
  pid: number;
  host: string;
  nonce: string;
}

export function lockPathFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.nbagent-lock`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readInfo(path: string): Promise<LockInfo | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as LockInfo;
  } catch {
    return undefined; // missing, or being written right now
  }
}

async function isStale(path: string, info: LockInfo | undefined): Promise<boolean> {
  try {
    const age = Date.now() - (await stat(path)).mtimeMs;
    if (age > STALE_MS) return true;
    if (info && info.host === hostname() && !processAlive(info.pid)) return true;
    return false;
  } catch {
    return false; // gone: the next attempt will simply create it
  }
}

/** Runs `fn` while holding the lock for `file`; waits up to `timeoutMs` for another holder. */
export async function withFileLock<T>(file: string, fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const path = lockPathFor(file);
  const me: LockInfo = { pid: process.pid, host: hostname(), nonce: randomBytes(8).toString("hex") };
  const deadline = Date.now() + timeoutMs;
  let wait = 2;
  for (;;) {
    try {
      const fh = await open(path, "wx", 0o644);
      try {
        await fh.writeFile(JSON.stringify(me));
      } finally {
        await fh.close();
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const info = await readInfo(path);
    if (await isStale(path, info)) {
      // Move the stale lock aside atomically; only one contender wins the rename.
      const aside = `${path}.stale-${me.nonce}`;
      try {
        await rename(path, aside);
        const moved = await readInfo(aside);
        if (moved && moved.nonce !== info?.nonce) {
          // A live lock was created between our check and the rename: put it back (link fails if
          // yet another process holds the path now, which then is the holder).
          await link(aside, path).catch(() => {});
        }
        await unlink(aside).catch(() => {});
      } catch {
        /* someone else handled it */
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new LockTimeoutError(
        `another process${info ? ` (pid ${info.pid})` : ""} is saving this notebook (lock ${path})`,
      );
    }
    await delay(wait);
    wait = Math.min(wait * 2, 25);
  }
  try {
    return await fn();
  } finally {
    const info = await readInfo(path);
    if (info?.nonce === me.nonce) await unlink(path).catch(() => {});
  }
}
