// Time limits as AbortSignals (src/kernel/time-limits.ts) and a call's Deadline built on them: the
// reason of whichever fires first is what the waiter sees. Events and order only, no wall-clock bounds.
import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { abortable, anySignal, deadlineSignal, TimeoutError } from "../../src/kernel/index.js";
import { CallAbortedError, CallTimeoutError, Deadline, raceDeadline } from "../../src/runtime/index.js";
import { describeFailure } from "../../src/tools/failure-text.js";

/** Resolves once the signal has fired (at once if it already has). */
function whenAborted(signal: AbortSignal): Promise<unknown> {
  return signal.aborted ? Promise.resolve() : once(signal, "abort");
}

test("deadlineSignal fires with its typed reason; dispose() stops it", async () => {
  const limit = deadlineSignal(1, () => new TimeoutError(1, "Error: no x_reply within 1 ms"));
  await whenAborted(limit.signal);
  assert.ok(limit.signal.reason instanceof TimeoutError);
  assert.equal(limit.signal.reason.ms, 1);
  limit.dispose();

  const disposed = deadlineSignal(1, () => new TimeoutError(1));
  disposed.dispose();
  // A later limit firing proves the disposed one's time has passed too.
  const later = deadlineSignal(5, () => new TimeoutError(5));
  await whenAborted(later.signal);
  assert.equal(disposed.signal.aborted, false);
});

test("the caller's signal and the limit compose: the first reason wins", async () => {
  const caller = new AbortController();
  const limit = deadlineSignal(60_000, () => new TimeoutError(60_000), [caller.signal]);
  caller.abort(new Error("stop"));
  assert.equal(limit.signal.aborted, true);
  assert.equal((limit.signal.reason as Error).message, "stop");
  limit.dispose();

  const none = deadlineSignal(undefined, () => new TimeoutError(0), [caller.signal]);
  assert.equal(none.signal, caller.signal, "no time limit: the caller's signal as it is");
});

test("anySignal works without AbortSignal.any (Node < 20.3)", () => {
  const native = (AbortSignal as { any?: unknown }).any;
  (AbortSignal as { any?: unknown }).any = undefined;
  try {
    const a = new AbortController();
    const b = new AbortController();
    const both = anySignal([a.signal, undefined, b.signal]);
    assert.equal(both.aborted, false);
    b.abort("b first");
    a.abort("a second");
    assert.equal(both.reason, "b first");
    const fired = anySignal([new AbortController().signal, AbortSignal.abort("already")]);
    assert.equal(fired.reason, "already");
  } finally {
    (AbortSignal as { any?: unknown }).any = native;
  }
});

test("abortable leaves the wait with the reason and runs onAbort; the promise's own result passes through", async () => {
  const c = new AbortController();
  let left = 0;
  const waiting = abortable(new Promise(() => {}), c.signal, () => left++);
  c.abort(new TimeoutError(7));
  await assert.rejects(waiting, TimeoutError);
  assert.equal(left, 1);
  assert.equal(await abortable(Promise.resolve(3), new AbortController().signal), 3);
  await assert.rejects(abortable(Promise.reject(new Error("own")), new AbortController().signal), /own/);
});

test("Deadline: its signal carries CallTimeoutError; raceDeadline maps the caller's abort to CallAbortedError", async () => {
  const deadline = new Deadline(0.001);
  // Its timer is unref'd like AbortSignal.timeout's (a deadline outlives its call); in real use the
  // work it bounds keeps the process alive, here this handle does.
  const alive = setInterval(() => {}, 1000);
  await whenAborted(deadline.signal).finally(() => clearInterval(alive));
  assert.ok(deadline.signal.reason instanceof CallTimeoutError);
  assert.equal(deadline.signal.reason.seconds, 0.001);
  assert.equal(describeFailure(deadline.signal.reason), "Command timed out after 0.001 seconds");
  assert.equal(new Deadline(0, 0).signal.aborted, true, "an expired deadline's signal is aborted at once");

  await assert.rejects(raceDeadline(new Promise(() => {}), new Deadline(0.001)), CallTimeoutError);
  const c = new AbortController();
  const race = raceDeadline(new Promise(() => {}), new Deadline(60), c.signal);
  c.abort("user pressed stop");
  await assert.rejects(
    race,
    (e: Error) => e instanceof CallAbortedError && e.message === "user pressed stop",
  );
  assert.equal(await raceDeadline(Promise.resolve("ok"), new Deadline(60)), "ok");
});
