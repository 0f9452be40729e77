/**
 * Pipelined cells (docs/runs.md, "Pipelined cells"; src/kernel/execution.ts AheadRequest) against a
 * scripted kernel: a request sent at the reply of the one before it is queued, its messages kept
 * until an execution takes it over, each message going to the request its parent_header names; the
 * execution whose reply let the next request go ends as that reply says — a later interrupt, time
 * limit or death belongs to the next one.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AheadRequest,
  type DeathCause,
  type ExecuteOptions,
  type ExecutionHost,
  KernelClient,
  type KernelDeath,
  MessageFactory,
  runExecution,
} from "../../src/kernel/index.js";
import { ScriptedKernel } from "./scripted-kernel.js";

function setup() {
  const kernel = new ScriptedKernel();
  const client = new KernelClient(kernel, new MessageFactory());
  let alive = true;
  const listeners = new Set<(reason: string, limit?: undefined, cause?: DeathCause) => void>();
  const host: ExecutionHost = {
    client,
    isAlive: () => alive,
    death: (): KernelDeath => ({ reason: "the kernel process ended" }) as KernelDeath,
    interrupt: async () => {
      kernel.send("control", client.factory.interruptRequest());
    },
    forceRestart: async () => {},
    onDeath: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  const die = (reason: string) => {
    alive = false;
    for (const l of [...listeners]) l(reason);
  };
  const run = (code: string, options?: ExecuteOptions) => runExecution(host, code, options);
  return { kernel, host, die, run };
}

test("the next request goes at the reply; its messages before the take-over are kept, in order, for it alone", async () => {
  const { kernel, host, run } = setup();
  let ahead: AheadRequest | undefined;
  const chunks1: string[] = [];
  const first = run("print(1)", {
    onChunk: (t) => chunks1.push(t),
    onReply: (reply) => {
      assert.deepEqual(reply, { status: "ok", interrupted: false });
      ahead = new AheadRequest(host, "print(2)");
      return true;
    },
  });
  const [r1] = kernel.requests();
  kernel.busy(r1!);
  kernel.print(r1!, "one\n");
  kernel.reply(r1!);
  assert.ok(ahead, "sent at the reply");
  const r2 = kernel.requests()[1]!;
  assert.equal((r2.content as { code: string }).code, "print(2)");
  assert.equal((r2.content as { stop_on_error: boolean }).stop_on_error, false);
  // IOPub trails the shell reply: the first one's late output is still its own.
  kernel.print(r1!, "one, late\n");
  kernel.idle(r1!);
  // The kernel runs the second at once; the host takes it over later.
  kernel.busy(r2);
  kernel.print(r2, "two\n");
  const res1 = await first;
  assert.equal(res1.status, "ok");
  assert.deepEqual(chunks1, ["one\n", "one, late\n"]);
  const chunks2: string[] = [];
  const second = run("print(2)", { ahead, onChunk: (t) => chunks2.push(t) });
  kernel.print(r2, "two, live\n");
  kernel.reply(r2, { status: "ok", execution_count: 2 });
  kernel.idle(r2);
  const res2 = await second;
  assert.equal(res2.status, "ok");
  assert.equal(res2.executionCount, 2);
  assert.equal(res2.codeStarted, true);
  assert.deepEqual(chunks2, ["two\n", "two, live\n"]);
  assert.equal(kernel.requests().length, 2, "the taken-over request is not sent again");
});

test("a reply's word from nbagent's guard reaches the caller, and a request sent after another names it", async () => {
  const { kernel, host, run } = setup();
  const seen: unknown[] = [];
  let first: AheadRequest | undefined;
  let second: AheadRequest | undefined;
  const running = run("x = 0", {
    onReply: (reply) => {
      seen.push(reply);
      first = new AheadRequest(host, "x = 1");
      second = new AheadRequest(host, "x = 2", { after: first });
      return true;
    },
  });
  const [r0] = kernel.requests();
  kernel.busy(r0!);
  kernel.reply(r0!, { status: "ok", execution_count: 1 }, { nbagent_next: "run" });
  kernel.idle(r0!);
  await running;
  assert.deepEqual(seen, [{ status: "ok", interrupted: false, next: "run" }]);
  const [, r1, r2] = kernel.requests();
  assert.deepEqual(r1!.metadata, {}, "the first one sent ahead runs whatever came before");
  assert.deepEqual(r2!.metadata, { nbagent_after: first!.msgId });
  assert.equal(first!.msgId, r1!.header.msg_id);
  first!.release();
  second!.release();
  // A kernel without the guard says nothing of it: the caller is told nothing either.
  const bare = setup();
  const heard: unknown[] = [];
  const plain = bare.run("x = 0", { onReply: (reply) => void heard.push(reply) });
  const [p0] = bare.kernel.requests();
  bare.kernel.reply(p0!);
  bare.kernel.idle(p0!);
  await plain;
  assert.deepEqual(heard, [{ status: "ok", interrupted: false }]);
});

test("a reply whose code raised says error (the caller sends nothing after it unless errors are allowed)", async () => {
  const { kernel, run } = setup();
  const seen: unknown[] = [];
  const p = run("1/0", {
    onReply: (reply) => {
      seen.push(reply);
      return false;
    },
  });
  const [r1] = kernel.requests();
  kernel.answer(r1!, "iopub", "error", { ename: "E", evalue: "bad", traceback: [] });
  kernel.replyError(r1!);
  kernel.idle(r1!);
  assert.equal((await p).status, "error");
  assert.deepEqual(seen, [{ status: "error", interrupted: false }]);
});

test("after a reply that let the next request go: a death is the next one's, an abort interrupts only the next one", async () => {
  // Death: the first ends as its reply said; the second, taken over after, ends with the kernel died.
  {
    const { kernel, host, die, run } = setup();
    let ahead: AheadRequest | undefined;
    const first = run("x = 1", {
      onReply: () => {
        ahead = new AheadRequest(host, "import os; os._exit(1)");
        return true;
      },
    });
    const [r1] = kernel.requests();
    kernel.reply(r1!);
    die("the kernel process ended"); // before the first one's idle
    const res1 = await first;
    assert.equal(res1.status, "ok");
    assert.equal(res1.kernelDied, false);
    const res2 = await run("import os; os._exit(1)", { ahead });
    assert.equal(res2.kernelDied, true);
    assert.equal(res2.codeStarted, true, "it was sent: it may have run");
    assert.deepEqual(
      res2.notices.map((n) => n.kind),
      ["kernel-died"],
    );
  }
  // Abort: the first does not interrupt (its code is over); the second is interrupted once taken over.
  {
    const { kernel, host, run } = setup();
    const abort = new AbortController();
    let ahead: AheadRequest | undefined;
    const first = run("x = 1", {
      signal: abort.signal,
      onReply: () => {
        ahead = new AheadRequest(host, "y = 2");
        return true;
      },
    });
    const [r1] = kernel.requests();
    kernel.reply(r1!);
    abort.abort();
    assert.equal(kernel.interrupts(), 0, "no interrupt for code that ended");
    kernel.idle(r1!);
    const res1 = await first;
    assert.equal(res1.status, "ok");
    assert.equal(res1.cancelled, false);
    const r2 = kernel.requests()[1]!;
    kernel.busy(r2);
    const second = run("y = 2", { ahead, signal: abort.signal });
    // Not begun yet (no execute_input): an ipykernel would ignore a SIGINT now, so it waits.
    assert.equal(kernel.interrupts(), 0, "no interrupt before the kernel begins the next request");
    kernel.answer(r2, "iopub", "execute_input", { code: "y = 2", execution_count: 2 });
    assert.equal(kernel.interrupts(), 1, "the next request is interrupted once the kernel began it");
    kernel.answer(r2, "iopub", "error", { ename: "KeyboardInterrupt", evalue: "", traceback: [] });
    kernel.replyError(r2);
    kernel.idle(r2);
    const res2 = await second;
    assert.equal(res2.cancelled, true);
    assert.equal(res2.status, "error");
  }
});

test("a request sent ahead and never taken over is let go: its late messages reach no one", async () => {
  const { kernel, host } = setup();
  const ahead = new AheadRequest(host, "z = 3");
  const [r] = kernel.requests();
  ahead.release();
  assert.equal(ahead.future.isDisposed, true);
  kernel.reply(r!);
  kernel.idle(r!);
});

test("a kernel lost before the take-over: the request counts as started and the kernel as died while it could run", async () => {
  const { kernel, host, die, run } = setup();
  const ahead = new AheadRequest(host, "z = 3");
  assert.equal(kernel.requests().length, 1);
  die("the kernel process ended");
  const res = await run("z = 3", { ahead });
  assert.equal(res.kernelDied, true);
  assert.equal(res.codeStarted, true);
  assert.equal(kernel.requests().length, 1, "not sent again");
});

test("a time limit after the reply that let the next request go ends the execution there, with no interrupt", async () => {
  const { kernel, host, run } = setup();
  let ahead: AheadRequest | undefined;
  const first = run("x = 1", {
    timeoutMs: 5,
    onReply: () => {
      ahead = new AheadRequest(host, "y = 2");
      return true;
    },
  });
  const [r1] = kernel.requests();
  kernel.reply(r1!); // its idle never comes (lost): the time limit ends it as its reply said
  const res1 = await first;
  assert.equal(res1.status, "ok");
  assert.equal(res1.timedOut, false);
  assert.equal(kernel.interrupts(), 0);
  ahead?.release();
});

test("a request sent ahead that ended before the kernel was lost ends as its reply said", async () => {
  const { kernel, host, die, run } = setup();
  const ahead = new AheadRequest(host, "z = 3");
  const [r] = kernel.requests();
  kernel.reply(r!, { status: "ok", execution_count: 4 });
  kernel.idle(r!);
  die("killed from outside");
  const res = await run("z = 3", { ahead });
  assert.equal(res.status, "ok");
  assert.equal(res.kernelDied, false);
  assert.equal(res.executionCount, 4);
});
