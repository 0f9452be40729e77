/**
 * Lock files across real processes (src/sys/lock-file.ts): a live holder in another process keeps
 * the lock; its release lets a waiter in; a holder killed while holding leaves a stale lock that
 * is taken over; a lock whose owner's pid now names another process, or that is garbage, is stale.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { lstat, mkdtemp, readdir, readlink, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import {
  acquireLockFile,
  inspectLockFile,
  isStaleLock,
  LockFileTimeoutError,
  withLockFile,
} from "../../src/sys/lock-file.js";
import { HOST, ownStartTime } from "../../src/sys/proc.js";

const HOLDER = new URL("./lock-holder.ts", import.meta.url).pathname;

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "nbagent-sys-lock-"));
}

interface Holder {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the next stdout line. */
  next(): Promise<string>;
}

/** A child process holding the lock at `path` (resolves once it says "held"). */
async function holder(path: string): Promise<Holder> {
  const child = spawn(process.execPath, ["--import", "tsx", HOLDER, path], { stdio: "pipe" });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const r = await lines.next();
    if (r.done) throw new Error("the holder ended without a line");
    return r.value;
  };
  assert.equal(await next(), "held");
  return { child, next };
}

test("a lock held by a live process in another process is not taken; the waiter names the holder", async (t) => {
  const path = join(await tempDir(), "x.lock");
  const h = await holder(path);
  t.after(() => h.child.kill("SIGKILL"));
  const err = await acquireLockFile(path, { timeoutMs: 0 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof LockFileTimeoutError);
  assert.equal(err.holder?.pid, h.child.pid);
  assert.equal(err.holder?.host, HOST);
});

test("a waiter gets the lock once the holding process releases it, not before", async (t) => {
  const path = join(await tempDir(), "x.lock");
  const h = await holder(path);
  t.after(() => h.child.kill("SIGKILL"));
  const events: string[] = [];
  const waiting = acquireLockFile(path, { timeoutMs: 600_000 }).then((held) => {
    events.push("acquired");
    return held;
  });
  // Let the waiter look at the held lock several times first.
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  events.push("release asked");
  h.child.stdin.write("release\n");
  const held = await waiting;
  assert.equal(await h.next(), "released");
  assert.deepEqual(events, ["release asked", "acquired"]);
  assert.equal((await inspectLockFile(path))?.owner?.pid, process.pid);
  held.release();
  assert.equal(await inspectLockFile(path), undefined);
});

test("a holder killed while holding leaves a stale lock that is taken over at once; no debris stays", async () => {
  const dir = await tempDir();
  const path = join(dir, "x.lock");
  const h = await holder(path);
  const dead = h.child.pid;
  h.child.kill("SIGKILL");
  await once(h.child, "exit");
  const left = await inspectLockFile(path);
  assert.equal(left?.owner?.pid, dead, "the dead holder's lock is still there");
  assert.equal(isStaleLock(left!), true);
  const held = await acquireLockFile(path, { timeoutMs: 0 });
  assert.equal((await inspectLockFile(path))?.owner?.pid, process.pid);
  held.release();
  assert.deepEqual(await readdir(dir), []);
});

test("a lock whose pid now belongs to another process (other start time) is stale; a garbage file too", async () => {
  const dir = await tempDir();
  const path = join(dir, "x.lock");
  // This very process, but "started" at another time: the pid was reused.
  await symlink(JSON.stringify({ pid: process.pid, host: HOST, start: "1", nonce: "00000000aa" }), path);
  assert.notEqual(ownStartTime(), "1");
  assert.equal(isStaleLock((await inspectLockFile(path))!), true);
  await withLockFile(
    path,
    async () => {
      assert.equal((await inspectLockFile(path))?.owner?.start, ownStartTime());
    },
    { timeoutMs: 0 },
  );
  await writeFile(path, "not a lock");
  assert.equal((await inspectLockFile(path))?.owner, undefined);
  const held = await acquireLockFile(path, { timeoutMs: 0 });
  assert.ok((await lstat(path)).isSymbolicLink());
  assert.equal(JSON.parse(await readlink(path)).pid, process.pid);
  held.release();
  assert.deepEqual(await readdir(dir), []);
});

test("a fresh lock of another host is not stale (its owner cannot be asked)", async () => {
  const path = join(await tempDir(), "x.lock");
  await symlink(JSON.stringify({ pid: 1, host: `${HOST}-elsewhere`, nonce: "00000000bb" }), path);
  const seen = await inspectLockFile(path);
  assert.equal(isStaleLock(seen!), false);
  await assert.rejects(acquireLockFile(path, { timeoutMs: 0 }), LockFileTimeoutError);
});
