import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallAbortedError,
  CallTimeoutError,
  Deadline,
  FifoLock,
  QueueWaitTimeoutError,
} from "../../src/runtime/index.js";
import { describeFailure } from "../../src/tools/failure-text.js";

test("FIFO order, and a waiter that gives up leaves the line without disturbing it", async () => {
  const lock = new FifoLock();
  const order: number[] = [];
  const first = await lock.acquire();
  const ac = new AbortController();
  const waits = [1, 2, 3].map((i) =>
    lock.acquire(new Deadline(30), i === 2 ? ac.signal : undefined).then((release) => {
      order.push(i);
      release();
    }),
  );
  ac.abort();
  await assert.rejects(waits[1], CallAbortedError);
  first();
  await Promise.all([waits[0], waits[2]]);
  assert.deepEqual(order, [1, 3]);
  assert.equal(lock.busy, false);
});

test("the queue wait honours the deadline with the timeout text", async () => {
  const lock = new FifoLock();
  const release = await lock.acquire();
  await assert.rejects(lock.acquire(new Deadline(0.05)), (e: Error) => {
    assert.ok(e instanceof CallTimeoutError);
    assert.equal(describeFailure(e), "Command timed out after 0.05 seconds");
    return true;
  });
  release();
  assert.equal(lock.busy, false);
});

test("a wait that times out names the holder: the tag it took the lock with, and since when", async () => {
  const lock = new FifoLock();
  const first = { call: "first" };
  const second = { call: "second" };
  const before = Date.now();
  const release = await lock.acquire(undefined, undefined, first);
  assert.equal(lock.holder?.tag, first);
  const queued = lock.acquire(new Deadline(30), undefined, second);
  const alsoAhead = lock.acquire(new Deadline(30), undefined, { call: "also ahead" });
  const third = lock.acquire(new Deadline(0.05));
  const fourth = lock.acquire(new Deadline(30), undefined, { call: "fourth" }); // behind it: not counted
  await assert.rejects(third, (e: Error) => {
    assert.ok(e instanceof QueueWaitTimeoutError);
    assert.ok(e instanceof CallTimeoutError, "still a timeout for everyone else");
    assert.equal(e.holder?.tag, first);
    assert.ok(e.holder!.since >= before && e.holder!.since <= Date.now());
    assert.equal(e.ahead, 2, "two calls waited ahead of it");
    return true;
  });
  release();
  const next = await queued;
  assert.equal(lock.holder?.tag, second, "the turn passed on with its tag");
  next();
  (await alsoAhead)();
  (await fourth)();
  assert.equal(lock.holder, undefined);
  assert.equal(lock.busy, false);
});
