/**
 * Cross-process lock files. The rules and the reasoning behind them: docs/notebook-tool.md ("Files").
 *
 * A lock is a symlink whose target is its owner ({pid, host, start, nonce} as JSON): created in one
 * step, so it is never empty or half written. Whatever else is at that path (an empty or garbage
 * file, an unreadable owner, an older nbagent's plain lock file) is stale at once; so is a lock whose
 * owner process on this host is gone (or is a zombie, or its pid now belongs to another process:
 * the owner's start time tells, see proc.ts), and a lock of another host older than STALE_MS.
 *
 * A stale lock is never removed: a new lock is renamed over it, so the path is never empty during
 * a takeover and a plain create cannot slip in. Two processes must not both do that for the same
 * stale lock, so a takeover first creates a "breaker" `<lock>.break-<stale id>` (exclusive), checks
 * under it that the stale lock is still there, and renames. A breaker whose owner died is itself
 * stale: the next one is `<breaker>-<its id>`, a name every contender derives alike, so at most one
 * live process holds a breaker for a given stale lock. Breakers of a lock that is no longer at the
 * path are harmless leftovers (a sweep may remove them); `<lock>.new-<nonce>` is the lock about to
 * be renamed into place.
 */

import { constants, readlinkSync, symlinkSync, unlinkSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { randomBytes } from "./crypto.js";
import { lstat, open, readlink, rename, symlink, unlink } from "./fs-promises.js";
import { HOST, ownStartTime, processAlive } from "./proc.js";

/** Age after which a lock of another host (no way to ask whether its owner runs) is stale. */
const STALE_MS = 30_000;
/** Breakers whose holders died in a row before a takeover gives up (each adds to the name). */
const MAX_BREAKER_CHAIN = 8;

/** Who holds a lock. */
export interface LockOwner {
  pid: number;
  host: string;
  /** The owner's start time (proc.ts ownStartTime), when known. */
  start?: string;
  nonce: string;
}

/** What is at a lock (or breaker) path. */
export interface SeenLock {
  /** Unique for this lock: its nonce, or for something without one its inode and change time. */
  id: string;
  owner?: LockOwner;
  mtimeMs: number;
}

/** Why acquireLockFile gave up: a live holder kept the lock for the whole wait. */
export class LockFileTimeoutError extends Error {
  constructor(
    readonly path: string,
    /** The holder seen last (undefined when what was there named none). */
    readonly holder: LockOwner | undefined,
    readonly waitedMs: number,
  ) {
    super(`the lock ${path} is held by another process`);
  }
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (
      typeof o.pid === "number" &&
      typeof o.host === "string" &&
      typeof o.nonce === "string" &&
      /^[0-9a-f]{8,32}$/.test(o.nonce) &&
      (o.start === undefined || typeof o.start === "string")
    ) {
      return o as LockOwner;
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
export async function inspectLockFile(path: string): Promise<SeenLock | undefined> {
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

/** Whether the owner of what was seen at a lock path is gone (or there is no owner to ask). */
export function isStaleLock(seen: SeenLock): boolean {
  const { owner } = seen;
  if (!owner) return true;
  if (owner.host !== HOST) return Date.now() - seen.mtimeMs > STALE_MS;
  return !processAlive(owner.pid, owner.start);
}

/** Whether an owner is a process of this host that is gone. */
export function ownerGone(owner: LockOwner): boolean {
  return owner.host === HOST && !processAlive(owner.pid, owner.start);
}

/**
 * Replaces the stale lock `staleId` at `path` with ours, if no live process is already doing so
 * and it is still there. True when we now hold the lock.
 */
async function takeOver(path: string, staleId: string, me: LockOwner, mine: string): Promise<boolean> {
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
    const holder = await inspectLockFile(breaker);
    // Gone: whoever made it has finished with this stale lock (the lock path changed).
    if (!holder) return false;
    if (!isStaleLock(holder)) return false;
    if (chain.length >= MAX_BREAKER_CHAIN) {
      throw new Error(`too many interrupted takeovers of the lock ${path}; remove ${path}.break-*`);
    }
    chain.push(breaker);
    breaker = `${breaker}-${holder.id}`;
  }
  let took = false;
  try {
    if ((await inspectLockFile(path))?.id !== staleId) return false;
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

export interface LockWait {
  /** Give up waiting for a live holder after this long (ms): LockFileTimeoutError. */
  timeoutMs: number;
  /** The longest pause between two looks at a held lock (the pause starts at 1 ms and doubles). */
  maxPollMs?: number;
}

/** A held lock. */
export interface HeldLock {
  /** Removes the lock if it is still ours; a second call does nothing. */
  release(): void;
}

/** Takes the lock at `path`, waiting while a live process holds it and taking over a stale one. */
export async function acquireLockFile(path: string, wait: LockWait): Promise<HeldLock> {
  const me: LockOwner = {
    pid: process.pid,
    host: HOST,
    start: ownStartTime(),
    nonce: randomBytes(6).toString("hex"),
  };
  const mine = JSON.stringify(me);
  const started = Date.now();
  const maxPoll = wait.maxPollMs ?? 25;
  let pause = 1;
  for (;;) {
    try {
      // Synchronous: one system call of microseconds (a round trip through libuv's thread pool
      // took longer than the edit it guards, under load).
      symlinkSync(mine, path);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const seen = await inspectLockFile(path);
    if (!seen) continue; // released meanwhile
    if (isStaleLock(seen) && (await takeOver(path, seen.id, me, mine))) break;
    const waited = Date.now() - started;
    if (waited > wait.timeoutMs) throw new LockFileTimeoutError(path, seen.owner, waited);
    await delay(pause);
    pause = Math.min(pause * 2, maxPoll);
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      // Nobody takes over the lock of a live process, so it is still ours unless that rule broke.
      try {
        if (parseOwner(readlinkSync(path))?.nonce === me.nonce) unlinkSync(path);
      } catch {
        /* gone, or not a link: not ours */
      }
    },
  };
}

/** Runs `fn` while holding the lock at `path` (acquireLockFile), releasing it afterwards. */
export async function withLockFile<T>(path: string, fn: () => Promise<T>, wait: LockWait): Promise<T> {
  const held = await acquireLockFile(path, wait);
  try {
    return await fn();
  } finally {
    held.release();
  }
}
