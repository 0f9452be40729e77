/**
 * The named-session registry lock (src/sys/lock-file.ts): a lock held by a live process is never
 * taken over however old it is (the old rule broke in after 10 s), and one whose holder died is.
 * No gateway is needed: touch() only rewrites the registry.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { lutimes, mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { NamedSessions } from "../../src/runtime/named-sessions.js";
import { inspectLockFile, LockFileTimeoutError } from "../../src/sys/lock-file.js";

const HOLDER = new URL("../sys/lock-holder.ts", import.meta.url).pathname;

test("a registry lock held by a live process is not taken over however old; a dead holder's is", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-ns-lock-"));
  const file = join(dir, "registry.json");
  const lock = `${file}.lock`;
  const child = spawn(process.execPath, ["--import", "tsx", HOLDER, lock], { stdio: "pipe" });
  t.after(() => child.kill("SIGKILL"));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  assert.equal((await lines.next()).value, "held");
  // A minute old: the former rule took over any lock older than 10 s.
  const old = new Date(Date.now() - 60_000);
  await lutimes(lock, old, old);
  const ns = new NamedSessions({
    file,
    gatewayIdentity: "test",
    gateway: () => Promise.reject(new Error("no gateway in this test")),
    lockTimeoutMs: 0,
  });
  const err = await ns.touch("s", "k").then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof LockFileTimeoutError);
  assert.equal(err.holder?.pid, child.pid);
  assert.equal((await inspectLockFile(lock))?.owner?.pid, child.pid, "the live holder keeps its lock");

  child.kill("SIGKILL");
  await once(child, "exit");
  await ns.touch("s", "k");
  const registry = JSON.parse(await readFile(file, "utf8"));
  assert.equal(registry.gateway, "test");
  assert.deepEqual((await readdir(dir)).sort(), ["registry.json"], "no lock, breaker or temp file left");
});
