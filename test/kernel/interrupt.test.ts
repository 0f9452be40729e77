// Abort and timeout against a real ipykernel: abort → interrupt, timeout → interrupt + notice, a kernel that
// ignores SIGINT is restarted after the grace period, and the next execution always runs. The
// backend-independent tests run on the local and the gateway backend (test/backends.ts); the
// interrupt_mode "message" test is local-only (on a gateway the server picks how to interrupt).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type ConnectedKernel, createLocalBackend } from "../../src/kernel/index.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { backendCases } from "../backends.js";
import { testSettings } from "../settings.js";

/** Runs `code`, aborting as soon as `marker` has been printed; returns the result. */
async function abortAfter(k: ConnectedKernel, code: string, marker: string, graceMs?: number) {
  const controller = new AbortController();
  const result = await k.execute(code, {
    signal: controller.signal,
    interruptGraceMs: graceMs,
    onChunk: (text) => {
      if (text.includes(marker)) controller.abort();
    },
  });
  assert.ok(controller.signal.aborted, "the marker was printed");
  return { result };
}

for (const backend of backendCases())
  describe(backend.name, () => {
    let kernel: ConnectedKernel;

    before(async () => {
      kernel = await (await backend.create()).startKernel({});
    });
    after(async () => {
      await backend.dispose();
    });

    test("abort interrupts time.sleep(100) and the kernel keeps its state (how fast: npm run bench kernel)", async () => {
      await kernel.execute("kept = 41");
      const { result } = await abortAfter(
        kernel,
        "import time\nprint('sleeping', flush=True)\ntime.sleep(100)",
        "sleeping",
      );
      assert.equal(result.cancelled, true);
      assert.equal(result.kernelRestarted, false);
      assert.equal(result.error?.name, "KeyboardInterrupt");
      const next = await kernel.execute("kept + 1");
      assert.equal(next.displays[0]?.text, "42");
    });

    test("timeout interrupts and annotates the output", async () => {
      const r = await kernel.execute("import time\nprint('working')\ntime.sleep(100)", { timeoutMs: 1000 });
      assert.equal(r.timedOut, true);
      assert.equal(r.cancelled, false);
      assert.equal(r.text.split("\n")[0], "working");
      assert.deepEqual(r.notices[0], { kind: "timed-out", afterMs: 1000 });
      assert.equal((await kernel.execute("1")).status, "ok");
    });

    test("a kernel that ignores SIGINT is restarted after the grace period; the next execution runs", async () => {
      const before = { pid: kernel.pid, kernelId: kernel.kernelId };
      await kernel.execute("lost = 1");
      const { result } = await abortAfter(
        kernel,
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('stubborn', flush=True)\ntime.sleep(100)",
        "stubborn",
        800,
      );
      assert.equal(result.cancelled, true);
      assert.equal(result.kernelRestarted, true);
      assert.equal(result.kernelDied, false);
      // grace + kill + a fresh kernel start (seconds on a loaded 2-core machine)
      assert.ok(kernel.isAlive());
      if (backend.name === "local") assert.notEqual(kernel.pid, before.pid, "a new process");
      // A gateway restarts in place (POST …/restart): the same kernel id, a new process behind it.
      else assert.equal(kernel.kernelId, before.kernelId, "the same gateway kernel");
      const next = await kernel.execute("'lost' in globals()");
      assert.equal(next.displays[0]?.text, "False");
    });

    test("an already-aborted signal sends nothing", async () => {
      const controller = new AbortController();
      controller.abort();
      const r = await kernel.execute("print('never')", { signal: controller.signal });
      assert.equal(r.cancelled, true);
      assert.equal(r.status, "aborted");
      assert.equal(r.text, "");
    });
  });

describe("local only", () => {
  const messageBackend = createLocalBackend({
    ...localBackendOptions(testSettings()),
    interruptMode: "message",
  });
  after(() => messageBackend.dispose());

  test("interrupt_mode message: interrupt_request on the control channel", async () => {
    const k = await messageBackend.startKernel({});
    const { result } = await abortAfter(k, "import time\nprint('zz', flush=True)\ntime.sleep(100)", "zz");
    assert.equal(result.error?.name, "KeyboardInterrupt");
    assert.equal(result.kernelRestarted, false);
  });
});
