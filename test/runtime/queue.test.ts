import assert from "node:assert/strict";
import { test } from "node:test";
import { CallAbortedError, CallTimeoutError, Deadline, FifoLock } from "../../src/runtime/index.js";
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
