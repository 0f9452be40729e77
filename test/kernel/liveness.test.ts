// Liveness and shutdown against a real ipykernel: a kernel dying mid-execution ends that execution
// promptly, a silent heartbeat is only a hint while the process lives, restart keeps the id, shutdown leaves nothing.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type ConnectedKernel, createLocalBackend, KernelStartError } from "../../src/kernel/index.js";
import { LocalKernelProcess } from "../../src/kernel/local/launcher.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { describeFailure } from "../../src/tools/failure-text.js";
import { testSettings } from "../settings.js";
import {
  childrenOf,
  exitMidExecution,
  groupMembers,
  pidAlive,
  processesMentioning,
  waitUntil,
} from "./helpers.js";

// These tests look at the spawn launcher's process, files and stderr: no fork server here.
const backend = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: false });
/** A fast heartbeat only where a test needs it (a loaded machine must not look like a hung kernel). */
const fastHeartbeat = createLocalBackend({
  ...localBackendOptions(testSettings()),
  forkServer: false,
  heartbeat: { intervalMs: 250, misses: 3 },
});
after(() => Promise.all([backend.dispose(), fastHeartbeat.dispose()]));

function connectionFileOf(kernel: ConnectedKernel): string {
  const launched = (kernel as unknown as { launched: unknown }).launched;
  assert.ok(launched instanceof LocalKernelProcess);
  return launched.connectionFile;
}

// Each test has its own kernel: they run concurrently to keep the file quick.
describe("liveness and shutdown", { concurrency: true }, () => {
  test("os._exit(1) mid-execution ends the execution within 5 s; restart brings it back", async () => {
    const kernel = await backend.startKernel({});
    const deaths: string[] = [];
    kernel.onDeath((reason) => deaths.push(reason));
    const firstPid = kernel.pid!;
    const r = await exitMidExecution(kernel);
    assert.equal(r.status, "error");
    assert.equal(r.text, "bye\n");
    assert.deepEqual(r.notices, [
      { kind: "kernel-died", reason: "kernel process ended: exit code 1", codeStarted: true },
    ]);
    assert.deepEqual(deaths, ["kernel process ended: exit code 1"]);

    const refused = await kernel.execute("1");
    assert.equal(refused.kernelDied, true);
    assert.deepEqual(refused.notices, [
      { kind: "kernel-not-running", reason: "kernel process ended: exit code 1" },
    ]);
    assert.equal(refused.codeStarted, false);

    const id = kernel.id;
    await kernel.restart();
    assert.equal(kernel.id, id);
    assert.ok(kernel.isAlive());
    assert.notEqual(kernel.pid, firstPid);
    assert.equal((await kernel.execute("2 + 2")).displays[0]?.text, "4");
    assert.deepEqual(deaths.length, 1, "an asked-for restart is not a death");
    await kernel.shutdown();
  });

  test("a silent heartbeat (SIGSTOP) is a hint, not a death: the living kernel keeps its state", async () => {
    const kernel = await fastHeartbeat.startKernel({});
    const pid = kernel.pid!;
    const deaths: string[] = [];
    kernel.onDeath((reason) => deaths.push(reason));
    assert.equal((await kernel.execute("kept = 41")).status, "ok");
    process.kill(pid, "SIGSTOP");
    try {
      // Three pings unanswered: the point where the heartbeat used to declare the kernel dead.
      assert.ok(await waitUntil(() => kernel.stats().heartbeatSilentMs !== undefined, 120_000));
    } finally {
      process.kill(pid, "SIGCONT");
    }
    assert.deepEqual(deaths, []);
    assert.ok(kernel.isAlive());
    assert.equal((await kernel.execute("kept + 1")).displays[0]?.text, "42");
    // Answering again clears the hint.
    assert.ok(await waitUntil(() => kernel.stats().heartbeatSilentMs === undefined, 120_000));
    await kernel.shutdown();
  });

  test("shutdown: process group gone, connection file removed, idempotent, later executes refused", async () => {
    const kernel = await backend.startKernel({});
    const pid = kernel.pid!;
    const file = connectionFileOf(kernel);
    assert.ok(existsSync(file));
    await kernel.execute("import subprocess\np = subprocess.Popen(['sleep', '300'])");
    assert.ok(groupMembers(pid).length >= 2);
    const children = childrenOf(pid);
    // With a PID namespace (docs/isolation.md) the watchdog is the kernel's relay, not its child.
    assert.equal(
      children.length,
      kernel.isolation?.pidNamespace ? 1 : 2,
      "the subprocess (and the watchdog)",
    );
    const started = performance.now();
    await kernel.shutdown();
    assert.ok(performance.now() - started < 5000, "bounded shutdown");
    assert.equal(kernel.isAlive(), false);
    assert.equal(pidAlive(pid), false);
    assert.ok(
      await waitUntil(() => groupMembers(pid).length === 0 && !children.some(pidAlive), 2000),
      `left: group ${groupMembers(pid)}, children ${children.filter(pidAlive)}`,
    );
    assert.equal(existsSync(file), false);
    await kernel.shutdown();
    const r = await kernel.execute("1");
    assert.equal(r.kernelDied, true);
    assert.match(JSON.stringify(r.notices), /shut down/);
  });

  test("a kernel that does not answer shutdown_request is terminated within the bounds", async () => {
    const kernel = await backend.startKernel({});
    const pid = kernel.pid!;
    // SIGTERM ignored and the shutdown request cannot run: only SIGKILL ends it
    await kernel.execute("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)");
    process.kill(pid, "SIGSTOP");
    await kernel.shutdown();
    assert.equal(pidAlive(pid), false);
  });

  test("an unknown kernelspec name is refused with the names available", async () => {
    await assert.rejects(
      backend.startKernel({ kernelName: "no-such-kernel" }),
      (e: unknown) =>
        e instanceof KernelStartError &&
        /^no kernelspec named "no-such-kernel"\. Available: .*python3/.test(describeFailure(e)),
    );
  });

  async function fakeLauncher(body: string): Promise<Record<string, string>> {
    const dir = await mkdtemp(join(tmpdir(), "nbagent-kernel-test-"));
    await writeFile(join(dir, "ipykernel_launcher.py"), body);
    return { ...(process.env as Record<string, string>), PYTHONPATH: dir, FAKE_DIR: dir };
  }

  test("a kernel that exits during startup is reported with its stderr", async () => {
    const env = await fakeLauncher("import sys\nsys.stderr.write('boom: cannot start\\n')\nsys.exit(3)\n");
    await assert.rejects(
      backend.startKernel({ env }),
      (e: unknown) =>
        e instanceof KernelStartError &&
        /^the kernel exited during startup \(exit code 3\):\nboom: cannot start/.test(describeFailure(e)),
    );
  });

  test("a start that loses a port race (Address already in use) is retried with fresh ports", async () => {
    const env = await fakeLauncher(
      [
        "import os, sys, runpy",
        "marker = os.path.join(os.environ['FAKE_DIR'], 'tried')",
        "if not os.path.exists(marker):",
        "    open(marker, 'w').close()",
        "    sys.stderr.write('zmq.error.ZMQError: Address already in use\\n')",
        "    sys.exit(1)",
        "sys.path = [p for p in sys.path if p != os.environ['FAKE_DIR']]",
        "sys.modules.pop('ipykernel_launcher', None)",
        "runpy.run_module('ipykernel_launcher', run_name='__main__')",
      ].join("\n"),
    );
    const kernel = await backend.startKernel({ env });
    assert.ok(existsSync(join(env.FAKE_DIR, "tried")), "the first attempt failed");
    assert.equal((await kernel.execute("1 + 1")).displays[0]?.text, "2");
    await kernel.shutdown();
  });

  test("a start can be cancelled; no process or connection file is left behind", async () => {
    const runtimeDir = await mkdtemp(join(tmpdir(), "nbagent-kernel-rt-"));
    const local = createLocalBackend({
      ...localBackendOptions(testSettings()),
      forkServer: false,
      runtimeDir,
    });
    const controller = new AbortController();
    const starting = local.startKernel({ signal: controller.signal });
    const spawned = await waitUntil(() => processesMentioning(runtimeDir).length > 0, 10_000, 10);
    assert.ok(spawned, "the kernel process was spawned");
    controller.abort();
    await assert.rejects(
      starting,
      (e: unknown) => e instanceof KernelStartError && /^kernel start was cancelled/.test(describeFailure(e)),
    );
    assert.deepEqual(await readdir(runtimeDir), []);
    assert.ok(await waitUntil(() => processesMentioning(runtimeDir).length === 0, 5000));
  });

  test("a missing working directory is reported before anything is spawned", async () => {
    await assert.rejects(
      backend.startKernel({ cwd: join(tmpdir(), "nbagent-no-such-dir-", String(process.pid)) }),
      (e: unknown) =>
        e instanceof KernelStartError &&
        /^the kernel's working directory .* does not exist/.test(describeFailure(e)),
    );
  });

  test("the kernel runs in the given cwd with exactly the given env", async () => {
    const dir = await mkdtemp(join(tmpdir(), "nbagent-kernel-cwd-"));
    const kernel = await backend.startKernel({
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", ONLY_THIS: "yes" },
    });
    const r = await kernel.execute(
      "import os\nprint(os.getcwd()); print(os.environ.get('ONLY_THIS')); print('HOME' in os.environ)",
    );
    assert.equal(r.text, `${dir}\nyes\nFalse\n`);
    await kernel.shutdown();
  });

  test("restart() or shutdown() during an execution ends that execution promptly", async () => {
    const kernel = await backend.startKernel({});
    let restarted: Promise<void> | undefined;
    let running = kernel.execute("import time\nprint('go', flush=True)\ntime.sleep(30)", {
      onChunk: () => {
        restarted ??= kernel.restart();
      },
    });
    let r = await running;
    await restarted;
    assert.equal(r.kernelDied, true);
    assert.equal(r.text, "go\n");
    assert.deepEqual(r.notices, [
      { kind: "kernel-died", reason: "the kernel was restarted", codeStarted: true },
    ]);
    assert.ok(kernel.isAlive());
    running = kernel.execute("import time\nprint('go', flush=True)\ntime.sleep(30)", {
      onChunk: (text) => {
        if (text === "go\n") void kernel.shutdown();
      },
    });
    r = await running;
    assert.deepEqual(r.notices, [
      { kind: "kernel-died", reason: "the kernel was shut down", codeStarted: true },
    ]);
  });
});
