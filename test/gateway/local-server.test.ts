/**
 * The shared local gateway (docs/backends.md, "Shared local gateway"), against real jupyter_server
 * processes: started on demand with a token, found again through info.json, its kernels in the
 * wrapper's isolation, recovery from a stale lock / dead pid / foreign pid / other interpreter,
 * idle culling by the server, a clear Error when it cannot start, and stop.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  ensureLocalGateway,
  gatewayDir,
  type LocalGatewayInfo,
  listLocalGateways,
  localGatewayKernelCount,
  localGatewayStatus,
  stopLocalGateway,
} from "../../src/kernel/gateway/local-server.js";
import { acquireLock } from "../../src/kernel/gateway/start-lock.js";
import { processAlive } from "../../src/sys/proc.js";
import { TEST_PYTHON } from "../python.js";
import { createKernel, execute, processesWith, rest } from "./local-server-client.js";

const PYTHON = TEST_PYTHON;

function stateRoot(): string {
  return mkdtempSync(join(tmpdir(), "nbagent-gw-"));
}

/** A pid that belonged to a process that has exited. */
function deadPid(): number {
  const r = spawnSync("/bin/sh", ["-c", "echo $$"], { encoding: "utf8" });
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0 && !processAlive(pid));
  return pid;
}

async function stopAfter(t: { after: (fn: () => Promise<void>) => void }, root: string): Promise<void> {
  t.after(async () => {
    await stopLocalGateway({ python: PYTHON, stateRoot: root });
  });
}

test("starts one server on demand (127.0.0.1, token required, info.json 0600 in a 0700 dir), reuses it, stops it", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  assert.equal(await localGatewayStatus({ python: PYTHON, stateRoot: root }), undefined);
  const info = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  const dir = gatewayDir(root, PYTHON);
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(info.token, /^[0-9a-f]{64}$/);
  assert.equal(info.python, PYTHON);
  assert.equal(info.logFile, join(dir, "server.log"));
  assert.match(info.serverVersion ?? "", /^\d+\.\d+/);
  assert.ok(processAlive(info.pid));
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, "info.json")).mode & 0o777, 0o600);
  assert.deepEqual(JSON.parse(readFileSync(join(dir, "info.json"), "utf8")), info);
  assert.equal(existsSync(join(dir, "lock")), false, "the lock is released once started");
  // The token is never on the command line (other users can read /proc/<pid>/cmdline).
  assert.ok(!readFileSync(`/proc/${info.pid}/cmdline`, "utf8").includes(info.token));

  // Never unauthenticated: no token, or a wrong one, is refused.
  assert.equal((await rest(info, "GET", "/api/kernels", undefined, "")).status, 403);
  assert.equal((await rest(info, "GET", "/api/kernels", undefined, "0".repeat(64))).status, 403);
  assert.equal((await rest(info, "POST", "/api/kernels", { name: "python3" }, "")).status, 403);
  assert.equal((await rest(info, "GET", "/api/kernels")).status, 200);

  const again = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.deepEqual(again, info, "a second call finds the same server");
  assert.deepEqual(await localGatewayStatus({ python: PYTHON, stateRoot: root }), info);
  assert.deepEqual(await listLocalGateways({ stateRoot: root }), [info]);
  assert.deepEqual(processesWith(dir), [info.pid], "one server process");

  const id = await createKernel(info);
  assert.equal(await localGatewayKernelCount(info), 1);
  const kernelPids = processesWith(join(dir, "runtime"), true).length;
  assert.ok(kernelPids >= 1, "the kernel runs (its connection file is in the server's runtime dir)");

  assert.equal(await stopLocalGateway({ python: PYTHON, stateRoot: root }), true);
  assert.equal(processAlive(info.pid), false);
  assert.deepEqual(processesWith(join(dir, "runtime"), true), [], `kernel ${id} ended with the server`);
  assert.equal(existsSync(join(dir, "info.json")), false);
  assert.equal(await localGatewayStatus({ python: PYTHON, stateRoot: root }), undefined);
  assert.deepEqual(await listLocalGateways({ stateRoot: root }), []);
  assert.equal(await stopLocalGateway({ python: PYTHON, stateRoot: root }), false, "nothing left to stop");
});

test("its kernels: the wrapper's isolation, cwd from the create request, the caller's env without the token, interrupt by message", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const cwd = mkdtempSync(join(tmpdir(), "nbagent-gw-cwd-"));
  const info = await ensureLocalGateway({
    python: PYTHON,
    stateRoot: root,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/", GW_MARKER: "marker-1" },
  });
  const id = await createKernel(info, cwd);
  const r = await execute(
    info,
    id,
    [
      "import os, json",
      "env = dict(os.environ)",
      "print(json.dumps({'cwd': os.getcwd(), 'pid': os.getpid(), 'marker': env.get('GW_MARKER'),",
      `  'token': any(${JSON.stringify(info.token)} in v for v in env.values()),`,
      "  'names': sorted(k for k in env if 'TOKEN' in k)}))",
    ].join("\n"),
  );
  assert.equal(r.status, "ok", JSON.stringify(r));
  const seen = JSON.parse(r.text);
  assert.equal(seen.cwd, cwd);
  assert.equal(seen.marker, "marker-1");
  assert.equal(seen.token, false, "the server's token is not in its kernels' environment");
  assert.deepEqual(seen.names, []);
  const log = readFileSync(info.logFile, "utf8");
  const isolation = /NBAGENT_ISOLATION (\{.*\})/.exec(log);
  assert.ok(isolation, `the kernel started through the wrapper:\n${log}`);
  if (JSON.parse(isolation[1]).pidNamespace)
    assert.equal(seen.pid, 2, "pid 2 of its own namespace, under its init");

  // Interrupt: by message (the wrapper's relay ignores SIGINT), reaching the running code.
  let asked = false;
  const slept = await execute(info, id, "import time\nprint('sleeping', flush=True)\ntime.sleep(120)", () => {
    if (asked) return;
    asked = true;
    void rest(info, "POST", `/api/kernels/${id}/interrupt`);
  });
  assert.equal(slept.status, "error");
  assert.equal(slept.error?.ename, "KeyboardInterrupt");
  const after = await execute(info, id, "print(6 * 7)");
  assert.equal(after.text.trim(), "42", "the kernel lives on after the interrupt");
});

test("without an env option the server gets only ordinary variables, never the host's secrets", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  // The host's environment as the edge captured it, with a secret in it.
  const hostEnv = { ...process.env, GW_TEST_API_KEY: "sk-test-secret-value-1234567890" };
  const info = await ensureLocalGateway({ python: PYTHON, stateRoot: root, hostEnv });
  const id = await createKernel(info);
  const r = await execute(
    info,
    id,
    "import os\nprint(sorted(k for k in os.environ if k.startswith('GW_')), 'PATH' in os.environ)",
  );
  assert.equal(r.text.trim(), "[] True");
});

test("a stale lock (its holder is dead) is taken over; a live holder is waited for", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const dir = gatewayDir(root, PYTHON);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, "lock"), JSON.stringify({ pid: deadPid(), at: Date.now() - 1000 }));
  const info = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.ok(processAlive(info.pid));
  assert.equal(existsSync(join(dir, "lock")), false);
  await stopLocalGateway({ python: PYTHON, stateRoot: root });

  // This process holds the lock: ensure waits (starts nothing) until it is released.
  const release = await acquireLock(join(dir, "lock"), { timeoutMs: 1000 });
  assert.ok(release);
  let settled = false;
  const pending = ensureLocalGateway({ python: PYTHON, stateRoot: root }).finally(() => {
    settled = true;
  });
  // Let the waiter poll the held lock a few times.
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(settled, false);
  assert.deepEqual(processesWith(dir), [], "no server started while another process holds the lock");
  release();
  const started = await pending;
  assert.ok(processAlive(started.pid));
});

test("info.json with a dead pid, a pid that is not this server, or another interpreter: a fresh server replaces it", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const dir = gatewayDir(root, PYTHON);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fake = (over: Partial<LocalGatewayInfo>): void =>
    writeFileSync(
      join(dir, "info.json"),
      JSON.stringify({
        url: "http://127.0.0.1:9",
        token: "f".repeat(64),
        pid: deadPid(),
        python: PYTHON,
        logFile: join(dir, "server.log"),
        startedAt: new Date().toISOString(),
        ...over,
      }),
    );

  fake({});
  const first = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.notEqual(first.token, "f".repeat(64));
  assert.ok(processAlive(first.pid));

  // A live process that is not the server (pid reuse): replaced, and that process is left alone.
  const other = spawn("/bin/sleep", ["600"], { stdio: "ignore" });
  t.after(() => other.kill("SIGKILL"));
  await stopLocalGateway({ python: PYTHON, stateRoot: root });
  fake({ pid: other.pid!, url: first.url, token: first.token });
  const second = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.notEqual(second.pid, other.pid);
  assert.ok(processAlive(other.pid!), "the unrelated process is not signalled");

  // The recorded server is of another interpreter: it is ended and a fresh one started.
  fake({ pid: second.pid, url: second.url, token: second.token, python: "/bin/sh" });
  const third = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.notEqual(third.pid, second.pid);
  assert.equal(processAlive(second.pid), false, "the mismatched server was shut down");
  assert.deepEqual(processesWith(dir), [third.pid]);
});

test("a server that cannot start: an Error naming the log file, with its tail and a fix", async () => {
  const root = stateRoot();
  // An interpreter without site-packages: it runs, but has no jupyter_server.
  const bin = mkdtempSync(join(tmpdir(), "nbagent-gw-py-"));
  const python = join(bin, "python3");
  writeFileSync(python, `#!/bin/sh\nexec ${PYTHON} -S "$@"\n`);
  chmodSync(python, 0o755);
  await assert.rejects(ensureLocalGateway({ python, stateRoot: root }), (err: Error) => {
    assert.match(
      err.message,
      /^the shared local gateway \(.*python3 -m jupyter_server\) exited \(exit code 1\) before it answered; log .*server\.log:/,
    );
    assert.match(err.message, /No module named 'jupyter_server'/);
    assert.match(err.message, /Fix: install jupyter_server for /);
    return true;
  });
  assert.equal(existsSync(join(gatewayDir(root, python), "info.json")), false);
  assert.equal(existsSync(join(gatewayDir(root, python), "lock")), false);
});

test("kernels idle with no client are culled by the server itself", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const info = await ensureLocalGateway({ python: PYTHON, stateRoot: root, idleCullSeconds: 2 });
  assert.equal(info.idleCullSeconds, 2);
  const id = await createKernel(info);
  // Bounded poll for the event (the server's cull loop), not a timing assertion.
  let kernels: unknown[] = [id];
  for (let i = 0; i < 600 && kernels.length > 0; i++) {
    kernels = (await rest(info, "GET", "/api/kernels")).json as unknown[];
    if (kernels.length) await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(kernels, []);
  assert.match(readFileSync(info.logFile, "utf8"), /Culling kernel/);
});

test("a server killed with SIGKILL takes its kernels with it (lifeline), and the next call starts a fresh one", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const dir = gatewayDir(root, PYTHON);
  const info = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  const id = await createKernel(info);
  assert.equal((await execute(info, id, "print('up')")).text, "up\n");
  const kernels = processesWith(join(dir, "runtime"), true);
  assert.ok(kernels.length >= 1);
  process.kill(info.pid, "SIGKILL");
  for (let i = 0; i < 600 && kernels.some((pid) => processAlive(pid)); i++)
    await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(
    kernels.filter((pid) => processAlive(pid)),
    [],
    "the kernel processes ended with their server",
  );
  const fresh = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.notEqual(fresh.pid, info.pid);
  assert.notEqual(fresh.token, info.token);
  assert.deepEqual((await rest(fresh, "GET", "/api/kernels")).json, []);
});

test("a recorded server that is alive but does not answer (stopped) is ended and replaced", async (t) => {
  const root = stateRoot();
  await stopAfter(t, root);
  const dir = gatewayDir(root, PYTHON);
  const hung = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  process.kill(hung.pid, "SIGSTOP");
  t.after(() => {
    try {
      process.kill(hung.pid, "SIGKILL");
    } catch {
      /* gone */
    }
  });
  const fresh = await ensureLocalGateway({ python: PYTHON, stateRoot: root });
  assert.notEqual(fresh.pid, hung.pid);
  assert.equal(processAlive(hung.pid), false, "the stopped server was killed, not left behind");
  assert.deepEqual(processesWith(dir), [fresh.pid]);
  assert.equal((await rest(fresh, "GET", "/api/kernels")).status, 200);
});
