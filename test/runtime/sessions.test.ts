/**
 * Kernel sessions against real ipykernel processes: state across calls, per-call isolation, the LRU
 * cap that never evicts a running session, waiting when all are busy, sweep, reset, and the
 * restart rules (docs/kernel-state.md, docs/python-tool.md).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createLocalBackend } from "../../src/kernel/index.js";
import type { Kernel, KernelBackend } from "../../src/kernel/types.js";
import {
  CallTimeoutError,
  createRuntime,
  Deadline,
  type Runtime,
  type SessionLease,
  sessionKey,
  TOO_MANY_RESTARTS,
} from "../../src/runtime/index.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { backendCases, type TestBackend } from "../backends.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-sessions-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function run(lease: SessionLease, code: string) {
  let text = "";
  const r = await lease.execute(code, { onChunk: (t) => (text += t) });
  return { ...r, text };
}

function call(
  rt: Runtime,
  sessionId: string,
  code: string,
  opts: { seconds?: number; mode?: "session" | "per-call"; reset?: boolean } = {},
) {
  return rt.withSession(
    { sessionId, cwd: root },
    { deadline: new Deadline(opts.seconds ?? 60), mode: opts.mode, reset: opts.reset },
    (lease) => run(lease, code),
  );
}

/** Python that blocks until `path` exists (a synchronisation point the test controls). */
const waitFor = (path: string) =>
  `import os, time\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)\nprint('released')`;

async function until(cond: () => boolean, ms = 20_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setImmediate(r));
  }
}

for (const backend of backendCases())
  describe(backend.name, () => {
    const runtimes: Runtime[] = [];
    let shared: TestBackend | undefined;
    before(async () => {
      // The gateway case: one backend (one server) for every runtime of this file, as a host would.
      if (backend.name === "gateway") shared = await backend.create();
    });
    after(async () => {
      await Promise.all(runtimes.map((r) => r.dispose()));
      await backend.dispose();
    });

    function runtime(options: Partial<Parameters<typeof createRuntime>[0]> = {}): Runtime {
      const r = createRuntime({
        settings: testSettings(),
        stateRoot: join(root, "state"),
        backend: shared,
        ...options,
      });
      runtimes.push(r);
      return r;
    }

    /**
     * A runtime whose kernels can die between the session's liveness check and the request: the
     * kernel process is killed (SIGKILL) and its death observed (a gateway says "restarting"), then the
     * request is made. Nothing of it can have run.
     */
    function killingRuntime(kills: { left: number }) {
      const inner = shared ?? createLocalBackend(localBackendOptions(testSettings()));
      const wrapped: KernelBackend = {
        name: inner.name,
        facts: inner.facts,
        kernelSpecNames: (o) => inner.kernelSpecNames(o),
        dispose: () => inner.dispose(),
        async startKernel(options) {
          const kernel = (await inner.startKernel(options)) as Kernel & { pid?: number };
          const execute = kernel.execute.bind(kernel);
          kernel.execute = async (code, opts) => {
            if (!code.startsWith("#kill") || kills.left === 0) return execute(code, opts);
            kills.left--;
            // A gateway kernel's process is the server's child: ask the kernel for its pid.
            const pid = kernel.pid ?? Number((await execute("import os; print(os.getpid())")).text);
            const dead = new Promise<void>((resolve) => kernel.onDeath(() => resolve()));
            process.kill(pid, "SIGKILL");
            await dead;
            return execute(code, opts);
          };
          return kernel;
        },
      };
      return runtime({ backend: wrapped });
    }

    test("state persists across calls of one session; per-call kernels are isolated and shut down", async () => {
      const rt = runtime();
      assert.equal((await call(rt, "keep", "x = 41")).status, "ok");
      const r = await call(rt, "keep", "print(x + 1)");
      assert.equal(r.text, "42\n");
      let perCallKernel: Kernel | undefined;
      const p1 = await rt.withSession(
        { sessionId: "keep", cwd: root },
        { deadline: new Deadline(60), mode: "per-call" },
        async (lease) => {
          perCallKernel = lease.kernel();
          const a = await run(lease, "y = 1");
          const b = await run(lease, "print(y, 'x' in globals())");
          return [a, b];
        },
      );
      assert.equal(p1[1].text, "1 False\n", "one kernel for all cells of a per-call call, not the session's");
      assert.equal(perCallKernel?.isAlive(), false, "per-call kernel shut down in finally");
      const p2 = await call(rt, "keep", "y", { mode: "per-call" });
      assert.equal(p2.status, "error");
      assert.equal(p2.error?.name, "NameError");
      assert.equal((await call(rt, "keep", "print(x)")).text, "41\n");
    });

    test("reset restarts before running: fresh state", async () => {
      const rt = runtime();
      await call(rt, "r", "z = 5");
      const r = await call(rt, "r", "print('z' in globals(), callable(run))", { reset: true });
      assert.equal(r.text, "False True\n", "state gone, prelude loaded again");
    });

    test("the fifth session evicts the least recently used idle one, never a running one", async () => {
      const rt = runtime({ maxSessions: 4 });
      const gate = join(root, `gate-${process.pid}-${backend.name}-lru`);
      const busy = call(rt, "s1", waitFor(gate));
      await until(() => rt.sessions.get(sessionKey("s1", root))?.currentKernel?.isBusy() === true);
      for (const s of ["s2", "s3", "s4"]) assert.equal((await call(rt, s, "1")).status, "ok");
      // LRU order by last use: s1 (running since before the others), s2, s3, s4
      assert.deepEqual(rt.sessions.keys()[0], sessionKey("s1", root));
      assert.equal((await call(rt, "s5", "print('five')")).text, "five\n");
      const keys = rt.sessions.keys().map((k) => (k.kind === "python" ? k.sessionId : k.kind));
      assert.deepEqual(keys.sort(), ["s1", "s3", "s4", "s5"]);
      writeFileSync(gate, "");
      const r = await busy;
      assert.equal(r.text, "released\n");
    });

    test("when every session is busy a new one waits for one to become idle, within its deadline", async () => {
      const rt = runtime({ maxSessions: 1 });
      const gate = join(root, `gate-${process.pid}-${backend.name}-wait`);
      const busy = call(rt, "a", waitFor(gate));
      await until(() => rt.sessions.get(sessionKey("a", root))?.currentKernel?.isBusy() === true);
      await assert.rejects(call(rt, "b", "1", { seconds: 0.5 }), CallTimeoutError);
      const waiting = call(rt, "b", "print('b ran')");
      writeFileSync(gate, "");
      assert.equal((await busy).text, "released\n");
      assert.equal((await waiting).text, "b ran\n");
      assert.deepEqual(rt.sessions.keys(), [sessionKey("b", root)]);
    });

    test("50 concurrent calls on one session run in FIFO order without interleaved output", async () => {
      const rt = runtime();
      await call(rt, "q", "order = []");
      const calls = Array.from({ length: 50 }, (_, i) =>
        call(rt, "q", `order.append(${i})\nfor k in range(20):\n    print('call${i}', k, flush=True)`),
      );
      const results = await Promise.all(calls);
      results.forEach((r, i) => {
        const expected = Array.from({ length: 20 }, (_, k) => `call${i} ${k}\n`).join("");
        assert.equal(r.text, expected);
      });
      const order = await call(rt, "q", "print(order)");
      assert.equal(order.text.trim(), `[${Array.from({ length: 50 }, (_, i) => i).join(", ")}]`);
    });

    test("sweep disposes idle-too-long and dead sessions and remembers why; a dead session is restarted before the next run", async () => {
      const rt = runtime({ idleTimeoutMs: 60_000, sweepIntervalMs: 3_600_000 }); // only the explicit sweeps below
      await call(rt, "idle", "1");
      await call(rt, "dead", "1");
      const deadKernel = rt.sessions.get(sessionKey("dead", root))!.currentKernel!;
      await deadKernel.shutdown();
      assert.deepEqual(rt.sessions.sweep(), [sessionKey("dead", root)]);
      assert.deepEqual(rt.sessions.sweep(Date.now() + 61_000), [sessionKey("idle", root)]);
      assert.deepEqual(rt.sessions.keys(), []);
      // The next lease on each key carries the record, once.
      const leaseOf = (sessionId: string) =>
        rt.withSession({ sessionId, cwd: root }, { deadline: new Deadline(60) }, async (lease) => ({
          replaced: lease.replaced,
          kernelStarted: lease.kernelStarted,
        }));
      const idle = await leaseOf("idle");
      assert.equal(idle.replaced?.why, "idle");
      assert.equal(idle.kernelStarted, true);
      assert.equal((await leaseOf("dead")).replaced?.why, "died");
      assert.deepEqual(await leaseOf("idle"), { replaced: undefined, kernelStarted: false });

      await call(rt, "s18", "v = 1");
      await rt.sessions.get(sessionKey("s18", root))!.currentKernel!.shutdown();
      const r = await call(rt, "s18", "print('v' in globals())");
      assert.deepEqual(r.events, [{ kind: "restarted-dead-kernel" }]);
      assert.equal(r.text, "False\n");
    });

    test("an evicted session's next lease says it was evicted, with the limit", async () => {
      const rt = runtime({ maxSessions: 1 });
      await call(rt, "first", "x = 1");
      await call(rt, "second", "1");
      const replaced = await rt.withSession(
        { sessionId: "first", cwd: root },
        { deadline: new Deadline(60) },
        async (lease) => lease.replaced,
      );
      assert.equal(replaced?.why, "evicted");
      assert.equal(replaced?.maxSessions, 1);
    });

    test("the lease that takes an idle session's slot carries what it evicted; the evicted one's next lease says it", async () => {
      const rt = runtime({ maxSessions: 1 });
      await call(rt, "old", "x = 1");
      const evicted = await rt.withSession(
        { sessionId: "new", cwd: root },
        { deadline: new Deadline(60) },
        async (lease) => lease.evicted,
      );
      assert.deepEqual(evicted?.key, sessionKey("old", root));
      assert.equal(evicted?.why, "evicted");
      // Said once: the session's next lease does not carry it again.
      const again = await rt.withSession(
        { sessionId: "new", cwd: root },
        { deadline: new Deadline(60) },
        async (lease) => lease.evicted,
      );
      assert.equal(again, undefined);
    });

    test("a recorded loss reaches the next lease once; the latest stays known until a reset", async () => {
      const rt = runtime();
      const lease = (reset?: boolean) =>
        rt.withSession(
          { sessionId: "lossy", cwd: root },
          { deadline: new Deadline(60), reset },
          async (l) => l,
        );
      const loss = { cause: "timeout" as const, at: 1, call: "python call", cell: "cell 2", seconds: 3 };
      await rt.withSession({ sessionId: "lossy", cwd: root }, { deadline: new Deadline(60) }, async (l) =>
        l.recordLoss(loss),
      );
      const next = await lease();
      assert.deepEqual(next.stateLoss, loss);
      assert.deepEqual(next.lastLoss, loss);
      const third = await lease();
      assert.equal(third.stateLoss, undefined, "reported once");
      assert.deepEqual(third.lastLoss, loss, "still known for hints");
      assert.equal((await lease(true)).lastLoss, undefined, "a reset forgets it");
    });

    test("a kernel that dies once the code was sent is restarted and the code is NOT run again", async () => {
      const rt = runtime();
      const marker = join(root, `ran-${process.pid}-${backend.name}`);
      const code = `import os\nopen(${JSON.stringify(marker)}, 'a').write('x')\nos._exit(1)`;
      await call(rt, "crash", "before = 1");
      const r = await call(rt, "crash", code);
      assert.equal(readFileSync(marker, "utf8"), "x", "the side effect happened once");
      assert.equal(r.kernelDied, true);
      // A gateway restarts a kernel whose process ended by itself and says so on IOPub; that is
      // what the session hears first (docs/backends.md), not the process's exit code.
      const reason =
        backend.name === "local"
          ? "kernel process ended: exit code 1"
          : "its process ended and the server is restarting it";
      assert.deepEqual(r.events, [{ kind: "died-during-code", reason, restarted: true }]);
      // Restarted and initialised: the next call runs at once, in the session's cwd, with fresh state.
      const next = await call(rt, "crash", "import os\nprint('before' in globals(), os.getcwd())");
      assert.deepEqual(next.events, []);
      assert.equal(next.text, `False ${root}\n`);
      // A crash is the code's, not the kernel's: crashing again is again one restart, not "too many".
      const again = await call(rt, "crash", code);
      assert.equal(again.events[0]?.kind, "died-during-code");
      assert.equal(readFileSync(marker, "utf8"), "xx");
    });

    test("a kernel found dead when the request is sent is restarted and the request sent once more", async () => {
      const rt = killingRuntime({ left: 1 });
      const marker = join(root, `once-${process.pid}-${backend.name}`);
      await call(rt, "early", "state = 1");
      const r = await call(
        rt,
        "early",
        `#kill\nopen(${JSON.stringify(marker)}, 'a').write('x')\nprint('ran')`,
      );
      assert.equal(r.status, "ok");
      assert.equal(r.text, "ran\n");
      assert.equal(readFileSync(marker, "utf8"), "x");
      assert.equal(r.events.length, 1);
      assert.equal(r.events[0].kind, "retried-before-start");
    });

    test("a kernel that keeps dying before any code starts fails with the too-many-restarts error; the session recovers", async () => {
      const rt = killingRuntime({ left: 2 });
      await call(rt, "crash2", "1");
      await assert.rejects(call(rt, "crash2", "#kill\nprint('never')"), (e: Error) => {
        assert.equal(e.message, TOO_MANY_RESTARTS);
        return true;
      });
      const r = await call(rt, "crash2", "print('back')");
      assert.equal(r.text, "back\n");
    });

    test("the periodic sweep (its own timer) disposes a session idle past the limit", async () => {
      const rt = runtime({ sweepIntervalMs: 50, idleTimeoutMs: 200 });
      await call(rt, "swept", "1");
      const kernel = rt.sessions.get(sessionKey("swept", root))!.currentKernel!;
      await until(() => rt.sessions.keys().length === 0, 10_000);
      await until(() => !kernel.isAlive(), 10_000);
    });
  });
