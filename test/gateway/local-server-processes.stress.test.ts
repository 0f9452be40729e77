/**
 * The shared local gateway across processes (docs/backends.md): two processes asking at once get
 * ONE server; killing one of them (SIGKILL) leaves the server and the other working.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { gatewayDir, stopLocalGateway } from "../../src/kernel/gateway/local-server.js";
import { processAlive } from "../../src/sys/proc.js";
import { TEST_PYTHON } from "../python.js";
import { processesWith, rest } from "./local-server-client.js";

const PYTHON = TEST_PYTHON;
const WORKER = new URL("./local-server-worker.ts", import.meta.url).pathname;
const TSX = import.meta.resolve("tsx");

// biome-ignore lint/suspicious/noExplicitAny: worker lines are arbitrary JSON
type Line = any;

function worker(
  stateRoot: string,
  asUser?: string[],
): { child: ChildProcessWithoutNullStreams; next: () => Promise<Line> } {
  const argv = [process.execPath, "--import", TSX, WORKER, stateRoot, PYTHON];
  const [command, ...args] = asUser ? [...asUser, ...argv] : argv;
  const child = spawn(command, args, {
    stdio: "pipe",
    env: asUser ? { ...process.env, HOME: stateRoot, TMPDIR: stateRoot } : process.env,
  });
  const queue: Line[] = [];
  const waiting: ((l: Line) => void)[] = [];
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  createInterface({ input: child.stdout }).on("line", (l) => {
    const parsed = JSON.parse(l);
    const w = waiting.shift();
    if (w) w(parsed);
    else queue.push(parsed);
  });
  child.on("exit", () => {
    for (const w of waiting.splice(0)) w({ exited: true, stderr });
  });
  return {
    child,
    next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiting.push(r))),
  };
}

test("two processes asking at once get one server; SIGKILL of one leaves the server and the other working", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "nbagent-gw-procs-"));
  t.after(async () => {
    await stopLocalGateway({ python: PYTHON, stateRoot: root });
  });
  const a = worker(root);
  const b = worker(root);
  t.after(() => {
    a.child.kill("SIGKILL");
    b.child.kill("SIGKILL");
  });
  assert.ok((await a.next()).ready);
  assert.ok((await b.next()).ready);
  a.child.stdin.write("go\n");
  b.child.stdin.write("go\n");
  const [ia, ib] = await Promise.all([a.next(), b.next()]);
  assert.ok(ia.pid, JSON.stringify(ia));
  assert.equal(ia.pid, ib.pid, "the same server");
  assert.equal(ia.url, ib.url);
  assert.equal(ia.token, ib.token);
  const dir = gatewayDir(root, PYTHON);
  assert.deepEqual(processesWith(dir), [ia.pid], "exactly one server process was started");

  // Both use it; then one is killed hard in the middle of its life.
  a.child.stdin.write("run\n");
  assert.equal((await a.next()).text, "42\n");
  const gone = new Promise((r) => a.child.once("exit", r));
  a.child.kill("SIGKILL");
  await gone;
  assert.ok(processAlive(ia.pid), "the server outlives the process that started it");
  b.child.stdin.write("run\n");
  assert.equal((await b.next()).text, "42\n", "the other process still executes code through it");
  assert.equal((await rest(ia, "GET", "/api/kernels", undefined, "")).status, 403, "no token, no access");
  b.child.stdin.write("exit\n");
});

const root = process.getuid?.() === 0;
test("as a non-root user (setpriv nobody): the server starts, its kernel runs code", {
  skip: root ? false : "needs root to switch to nobody",
}, async (t) => {
  // Not under the test run's TMPDIR: that one is 0700 root, which nobody cannot enter.
  const dir = mkdtempSync("/tmp/nbagent-gw-nobody-");
  chmodSync(dir, 0o777);
  // One hook, in order: the server is stopped (through its info.json) before the directory goes.
  t.after(async () => {
    await stopLocalGateway({ python: PYTHON, stateRoot: dir });
    rmSync(dir, { recursive: true, force: true });
  });
  const asNobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"];
  const w = worker(dir, asNobody);
  t.after(() => w.child.kill("SIGKILL"));
  const ready = await w.next();
  assert.ok(ready.ready, JSON.stringify(ready));
  w.child.stdin.write("go\n");
  const info = await w.next();
  assert.ok(info.pid, JSON.stringify(info));
  assert.equal(statSync(`/proc/${info.pid}`).uid, 65534, "the server runs as nobody");
  w.child.stdin.write("run\n");
  assert.equal((await w.next()).text, "42\n");
  w.child.stdin.write("exit\n");
});
