/**
 * A short-lived exclusive lock next to a file, held only around "check the file is unchanged, then
 * rename the new version over it", so two nbagent processes saving the same notebook cannot both
 * pass the check. Rules and the reasoning behind them: docs/notebook-tool.md ("Files").
 *
 * The lock is a symlink `.<name>.nbagent-lock` whose target is its owner ({pid, host, start,
 * nonce} as JSON): created in one step, so it is never empty or half written. Whatever else is at
 * that path (an empty or garbage file, an unreadable owner) is stale at once; so is a lock whose
 * owner process on this host is gone (or is a zombie, or its pid now belongs to another process),
 * and a lock of another host older than STALE_MS.
 *
 * A stale lock is never removed: a new lock is renamed over it, so the path is never empty during
 * a takeover and a plain create cannot slip in. Two processes must not both do that for the same
 * stale lock, so a takeover first creates a "breaker" `<lock>.break-<stale id>` (exclusive), checks
 * under it that the stale lock is still there, and renames. A breaker whose owner died is itself
 * stale: the next one is `<breaker>-<its id>`, a name every contender derives alike, so at most one
 * live process holds a breaker for a given stale lock. Breakers of a lock that is no longer at the
 * path are harmless leftovers and are removed.
 */
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readlink, rename, symlink, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { HOST, ownStartTime, processAlive } from "./owner.js";

/** Age after which a lock of another host (no way to ask whether its owner runs) is stale. */
const STALE_MS = 30_000;
/** Breakers whose holders died in a row before a takeover gives up (each adds to the name). */
const MAX_BREAKER_CHAIN = 8;

export class LockTimeoutError extends Error {}

interface Owner {
  pid: number;
  host: string;
  /** The owner's start time (see owner.ts), when known. */
  start?: string;
  nonce: string;
}

/** What is at a lock (or breaker) path. */
interface Seen {
  /** Unique for this lock: its nonce, or for something without one its inode and change time. */
  id: string;
  owner?: Owner;
  mtimeMs: number;
}

export function lockPathFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.nbagent-lock`);
}

function parseOwner(text: string): Owner | undefined {
  try {
    const o = JSON.parse(text) as Partial<Owner>;
    if (
      typeof o.pid === "number" &&
      typeof o.host === "string" &&
      typeof o.nonce === "string" &&
      /^[0-9a-f]{8,32}$/.test(o.nonce) &&
      (o.start === undefined || typeof o.start === "string")
    ) {
      return o as Owner;
    }
  } catch {
    /* garbage */
  }
  return undefined;
}

/** A regular file's first bytes, never blocking (a FIFO put at the path is not read). */
async function readSmallFile(path: string): Promise<string | undefined> {
  try {
    const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    try {
      if (!(await fh.stat()).isFile()) return undefined;
      const buf = Buffer.alloc(4096);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      return buf.subarray(0, bytesRead).toString("utf8");
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
}

/** What is at `path` now; undefined when nothing is. */
export async function inspectLock(path: string): Promise<Seen | undefined> {
  let st: import("node:fs").BigIntStats;
  try {
    st = await lstat(path, { bigint: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  if (st.isDirectory()) throw new Error(`the lock path ${path} is a folder; remove it`);
  let text: string | undefined;
  if (st.isSymbolicLink()) text = await readlink(path).catch(() => undefined);
  // A regular file: an older nbagent's lock (JSON written after the create), or garbage.
  else if (st.isFile()) text = await readSmallFile(path);
  const owner = text === undefined ? undefined : parseOwner(text);
  return {
    id: owner ? owner.nonce : `i${st.ino}x${st.ctimeNs}`,
    owner,
    mtimeMs: Number(st.mtimeMs),
  };
}

function isStale(seen: Seen): boolean {
  const { owner } = seen;
  if (!owner) return true;
  if (owner.host !== HOST) return Date.now() - seen.mtimeMs > STALE_MS;
  return !processAlive(owner.pid, owner.start);
}

/**
 * Replaces the stale lock `staleId` at `path` with ours, if no live process is already doing so
 * and it is still there. True when we now hold the lock.
 */
async function takeOver(path: string, staleId: string, me: Owner, mine: string): Promise<boolean> {
  const chain: string[] = [];
  let breaker = `${path}.break-${staleId}`;
  for (;;) {
    try {
      await symlink(mine, breaker);
      chain.push(breaker);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const holder = await inspectLock(breaker);
    // Gone: whoever made it has finished with this stale lock (the lock path changed).
    if (!holder) return false;
    if (!isStale(holder)) return false;
    if (chain.length >= MAX_BREAKER_CHAIN) {
      throw new Error(`too many interrupted takeovers of the lock ${path}; remove ${path}.break-*`);
    }
    chain.push(breaker);
    breaker = `${breaker}-${holder.id}`;
  }
  let took = false;
  try {
    if ((await inspectLock(path))?.id !== staleId) return false;
    const fresh = `${path}.new-${me.nonce}`;
    await symlink(mine, fresh);
    try {
      await rename(fresh, path);
      took = true;
    } finally {
      if (!took) await unlink(fresh).catch(() => {});
    }
    return true;
  } finally {
    // Ours always goes; the dead ones before it only once the stale lock is gone for good.
    for (const name of took ? chain : [breaker]) await unlink(name).catch(() => {});
  }
}

/** Runs `fn` while holding the lock for `file`; waits up to `timeoutMs` for another holder. */
export async function withFileLock<T>(file: string, fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const path = lockPathFor(file);
  const me: Owner = {
    pid: process.pid,
    host: HOST,
    start: ownStartTime(),
    nonce: randomBytes(6).toString("hex"),
  };
  const mine = JSON.stringify(me);
  const deadline = Date.now() + timeoutMs;
  let wait = 1;
  for (;;) {
    try {
      await symlink(mine, path);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const seen = await inspectLock(path);
    if (!seen) continue; // released meanwhile
    if (isStale(seen) && (await takeOver(path, seen.id, me, mine))) break;
    if (Date.now() > deadline) {
      const who = seen.owner
        ? ` (pid ${seen.owner.pid}${seen.owner.host === HOST ? "" : ` on ${seen.owner.host}`})`
        : "";
      throw new LockTimeoutError(`another process${who} is saving this notebook (lock ${path})`);
    }
    await delay(wait);
    wait = Math.min(wait * 2, 25);
  }
  try {
    return await fn();
  } finally {
    // Nobody takes over the lock of a live process, so it is still ours unless that rule broke.
    if ((await inspectLock(path).catch(() => undefined))?.id === me.nonce) await unlink(path).catch(() => {});
  }
}
