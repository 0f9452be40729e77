/**
 * The execution lifecycle's rules (src/kernel/execution.ts, docs/python-tool.md) against a scripted
 * kernel: a real KernelClient and MessageFactory over a transport whose "kernel" is the test, which
 * answers each request with the messages a rule needs — in an order, or not at all, that a real
 * ipykernel cannot be made to produce on demand. Milliseconds per rule; the end-to-end paths of the
 * same rules run against real kernels in execute.test.ts and interrupt.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type DeathCause,
  type ExecuteOptions,
  type ExecutionNotice,
  type JupyterMessage,
  KernelClient,
  type KernelDeath,
  MessageFactory,
  runExecution,
} from "../../src/kernel/index.js";
import { ScriptedKernel } from "./scripted-kernel.js";

interface Host {
  kernel: ScriptedKernel;
  interrupts: number;
  /** Called at each interrupt (after counting it). */
  onInterrupt?: () => void;
  restarts: number;
  die(reason: string): void;
  run(code: string, options?: ExecuteOptions): ReturnType<typeof runExecution>;
}

function host(opts: { alive?: boolean; restart?: () => Promise<void> } = {}): Host {
  const kernel = new ScriptedKernel({ answerLater: true });
  const client = new KernelClient(kernel, new MessageFactory());
  let alive = opts.alive ?? true;
  const listeners = new Set<(reason: string, limit?: undefined, cause?: DeathCause) => void>();
  const h: Host = {
    kernel,
    interrupts: 0,
    restarts: 0,
    die(reason) {
      alive = false;
      for (const l of listeners) l(reason);
    },
    run: (code, options) =>
      runExecution(
        {
          client,
          isAlive: () => alive,
          death: (): KernelDeath => ({ reason: "the kernel process ended" }) as KernelDeath,
          interrupt: async () => {
            h.interrupts++;
            h.onInterrupt?.();
          },
          forceRestart: async () => {
            h.restarts++;
            await opts.restart?.();
          },
          onDeath: (l) => {
            listeners.add(l);
            return () => listeners.delete(l);
          },
        },
        code,
        options,
      ),
  };
  return h;
}

const executeRequests = (k: ScriptedKernel) =>
  k.sent.filter((s) => s.msg.header.msg_type === "execute_request");
const kinds = (notices: ExecutionNotice[]) => notices.map((n) => n.kind);

test("done needs the reply and the idle, in either order; streams and the result come through", async () => {
  for (const order of ["reply-first", "idle-first"] as const) {
    const h = host();
    h.kernel.onSend = ({ msg }) => {
      h.kernel.answer(msg, "iopub", "status", { execution_state: "busy" });
      h.kernel.answer(msg, "iopub", "stream", { name: "stdout", text: "hello\n" });
      h.kernel.answer(msg, "iopub", "stream", { name: "stderr", text: "careful\n" });
      h.kernel.answer(msg, "iopub", "execute_result", {
        execution_count: 7,
        data: { "text/plain": "42" },
        metadata: {},
      });
      if (order === "reply-first") {
        h.kernel.reply(msg, { status: "ok", execution_count: 7 });
        h.kernel.idle(msg);
      } else {
        h.kernel.idle(msg);
        h.kernel.reply(msg, { status: "ok", execution_count: 7 });
      }
    };
    const chunks: string[] = [];
    const r = await h.run("print('hello')", { onChunk: (t, kind) => chunks.push(`${kind}:${t}`) });
    assert.equal(r.status, "ok", order);
    assert.equal(r.executionCount, 7);
    assert.equal(r.text, "hello\ncareful\n");
    assert.deepEqual(chunks, ["stdout:hello\n", "stderr:careful\n"]);
    assert.equal(r.displays.length, 1);
    assert.equal(r.codeStarted, true);
    assert.deepEqual(r.notices, []);
    // stop_on_error is off: a queued next cell is never aborted by this one's error
    assert.equal(
      (executeRequests(h.kernel)[0]!.msg.content as { stop_on_error?: boolean }).stop_on_error,
      false,
    );
  }
});

test("an error message makes the status error and puts the traceback in the text", async () => {
  const h = host();
  h.kernel.onSend = ({ msg }) => {
    h.kernel.answer(msg, "iopub", "error", {
      ename: "ValueError",
      evalue: "bad",
      traceback: ["Traceback", "ValueError: bad"],
    });
    h.kernel.reply(msg, {
      status: "error",
      ename: "ValueError",
      evalue: "bad",
      traceback: [],
      execution_count: 2,
    });
    h.kernel.idle(msg);
  };
  const r = await h.run("raise ValueError('bad')");
  assert.equal(r.status, "error");
  assert.deepEqual(r.error, {
    name: "ValueError",
    value: "bad",
    traceback: ["Traceback", "ValueError: bad"],
  });
  assert.equal(r.text, "Traceback\nValueError: bad\n");
});

test("idle with no reply: the execution ends with a no-reply notice instead of waiting", async () => {
  const h = host();
  h.kernel.onSend = ({ msg }) => h.kernel.idle(msg);
  const r = await h.run("x", { replyAfterIdleMs: 1 });
  assert.equal(r.status, "error");
  assert.equal(r.error?.name, "NoReply");
  assert.deepEqual(kinds(r.notices), ["no-reply"]);
});

test("stdin is refused: the first input() gets '' with a notice, the next gets end-of-file", async () => {
  const h = host();
  const answers: string[] = [];
  h.kernel.onSend = ({ channel, msg }) => {
    if (channel === "stdin") {
      answers.push((msg.content as { value: string }).value);
      if (answers.length === 2) {
        h.kernel.reply(request);
        h.kernel.idle(request);
      }
      return;
    }
    request = msg;
    h.kernel.answer(msg, "stdin", "input_request", { prompt: "name? ", password: false });
    h.kernel.answer(msg, "stdin", "input_request", { prompt: "again? ", password: false });
  };
  let request!: JupyterMessage;
  const r = await h.run("input(); input()");
  assert.deepEqual(answers, ["", "\x04"]);
  assert.equal(r.stdinRequested, true);
  assert.deepEqual(kinds(r.notices), ["stdin-refused"]);
});

test("an abort interrupts; a kernel that goes idle within the grace keeps its state", async () => {
  const h = host();
  const controller = new AbortController();
  let request!: JupyterMessage;
  h.kernel.onSend = ({ channel, msg }) => {
    if (msg.header.msg_type === "execute_request") {
      request = msg;
      h.kernel.answer(request, "iopub", "execute_input", { code: "while True: pass", execution_count: 1 });
      controller.abort();
    } else if (channel === "control" && msg.header.msg_type === "kernel_info_request") {
      // the interrupt landed: the cell ends with KeyboardInterrupt
      h.kernel.answer(request, "iopub", "error", { ename: "KeyboardInterrupt", evalue: "", traceback: [] });
      h.kernel.reply(request, { status: "error", ename: "KeyboardInterrupt", evalue: "", traceback: [] });
      h.kernel.idle(request);
    }
  };
  const r = await h.run("while True: pass", { signal: controller.signal });
  assert.equal(h.interrupts, 1);
  assert.equal(h.restarts, 0);
  assert.equal(r.cancelled, true);
  assert.equal(r.kernelRestarted, false);
  assert.equal(r.error?.name, "KeyboardInterrupt");
});

test("a time limit the cell ignores: interrupt, then after the grace a restart that loses the state", async () => {
  const h = host();
  // begun and busy for ever; the interrupt changes nothing
  h.kernel.onSend = ({ msg }) => {
    if (msg.header.msg_type === "execute_request")
      h.kernel.answer(msg, "iopub", "execute_input", { code: "deaf()", execution_count: 1 });
  };
  const r = await h.run("deaf()", { timeoutMs: 1, interruptGraceMs: 1 });
  assert.equal(h.interrupts, 1);
  assert.equal(h.restarts, 1);
  assert.equal(r.timedOut, true);
  assert.equal(r.kernelRestarted, true);
  assert.equal(r.status, "aborted");
  assert.deepEqual(kinds(r.notices), ["timed-out", "restarted-after-interrupt"]);
});

/** A host whose call is aborted as its execute_request is sent (still queued: nothing announced yet). */
function abortedAtSend(): { h: Host; controller: AbortController; request: () => JupyterMessage } {
  const h = host();
  const controller = new AbortController();
  let request: JupyterMessage | undefined;
  h.kernel.onSend = ({ msg }) => {
    if (msg.header.msg_type === "execute_request") {
      request = msg;
      controller.abort();
    }
  };
  return { h, controller, request: () => request! };
}

test("an abort before the kernel begins the request: the interrupt waits for its execute_input (docs/runs.md)", async () => {
  const { h, controller, request } = abortedAtSend();
  const running = h.run("while True: pass", { signal: controller.signal, interruptBeforeBeginMs: 60_000 });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(h.interrupts, 0, "not while the kernel has not begun it");
  h.kernel.answer(request(), "iopub", "execute_input", { code: "while True: pass", execution_count: 1 });
  assert.equal(h.interrupts, 1, "at its execute_input");
  h.kernel.answer(request(), "iopub", "error", { ename: "KeyboardInterrupt", evalue: "", traceback: [] });
  h.kernel.reply(request(), { status: "error", ename: "KeyboardInterrupt", evalue: "", traceback: [] });
  h.kernel.idle(request());
  const r = await running;
  assert.equal(r.cancelled, true);
  assert.equal(h.interrupts, 1);
  assert.equal(h.restarts, 0);
});

test("a kernel that never announces execute_input gets the interrupt after the wait", async () => {
  const { h, controller, request } = abortedAtSend();
  // The interrupt lands: the cell ends (without any execute_input).
  h.onInterrupt = () => {
    h.kernel.reply(request(), { status: "error", ename: "KeyboardInterrupt", evalue: "", traceback: [] });
    h.kernel.idle(request());
  };
  const r = await h.run("x", { signal: controller.signal, interruptBeforeBeginMs: 1 });
  assert.equal(h.interrupts, 1);
  assert.equal(h.restarts, 0);
  assert.equal(r.cancelled, true);
});

test("a restart after a stuck interrupt that fails ends the execution as a death", async () => {
  const h = host({
    restart: async () => {
      throw new Error("no kernel_info_reply");
    },
  });
  h.kernel.onSend = () => {};
  const r = await h.run("deaf()", { timeoutMs: 1, interruptGraceMs: 1 });
  assert.equal(r.kernelDied, true);
  assert.deepEqual(kinds(r.notices), ["timed-out", "kernel-died"]);
  assert.match(r.error?.value ?? "", /^restart after a stuck interrupt failed/);
});

test("a death while the cell runs ends it at once; a dead kernel is not sent the code", async () => {
  const h = host();
  h.kernel.onSend = ({ msg }) => {
    if (msg.header.msg_type === "execute_request") h.die("kernel process ended: exit code 1");
  };
  const r = await h.run("import os; os._exit(1)");
  assert.equal(r.kernelDied, true);
  assert.equal(r.codeStarted, true);
  const died = r.notices[0] as Extract<ExecutionNotice, { kind: "kernel-died" }>;
  assert.equal(died.kind, "kernel-died");
  assert.equal(died.reason, "kernel process ended: exit code 1");

  const dead = host({ alive: false });
  const r2 = await dead.run("1");
  assert.equal(r2.codeStarted, false);
  assert.deepEqual(kinds(r2.notices), ["kernel-not-running"]);
  assert.equal(executeRequests(dead.kernel).length, 0);
});

test("an abort before the request: nothing is sent", async () => {
  const h = host();
  const r = await h.run("1", { signal: AbortSignal.abort() });
  assert.equal(r.cancelled, true);
  assert.equal(r.status, "aborted");
  assert.equal(h.kernel.sent.length, 0);
});
