/**
 * The shared local gateway across processes (docs/backends.md): two processes asking at once get
 * ONE server; killing one of them (SIGKILL) leaves the server and the other working.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { gatewayDir, stopLocalGateway } from "../../src/kernel/gateway/local-server.js";
import { processAlive } from "../../src/kernel/gateway/process-info.js";
import { processesWith, rest } from "./local-server-client.js";

const PYTHON = "/usr/bin/python3";
const WORKER = new URL("./local-server-worker.ts", import.meta.url).pathname;
const TSX = import.meta.resolve("tsx");

// biome-ignore lint/suspicious/noExplicitAny: worker lines are arbitrary JSON
type Line = any;

function worker(stateRoot: string): { child: ChildProcessWithoutNullStreams; next: () => Promise<Line> } {
  const child = spawn(process.execPath, ["--import", TSX, WORKER, stateRoot, PYTHON], { stdio: "pipe" });
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
