/**
 * The runtime's event bus (src/runtime/events.ts, docs/view.md "Events"): every subscriber gets the
 * events in order; a slow one costs at most its queue — stream output for one cell is merged, the
 * lines left out counted, and past the bound the oldest events go and are counted.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { boundBundle } from "../../src/runtime/event-output.js";
import { EventBus, type StampedEvent } from "../../src/runtime/events.js";

const key = { kind: "python" as const, sessionId: "default", cwd: "/w" };
const out = (cellRun: number, text: string, name: "stdout" | "stderr" = "stdout") =>
  ({ type: "cell-output", cellRun, output: { kind: "stream", name, text, skippedLines: 0 } }) as const;

test("events arrive in order, numbered without gaps, to every subscriber", async () => {
  const bus = new EventBus();
  const a = bus.subscribe();
  const b = bus.subscribe();
  bus.emit({ type: "session", change: "started", key });
  bus.emit({ type: "cell-started", cellRun: 1, key, code: "print(1)" });
  bus.emit({ type: "cell-ended", cellRun: 1, status: "ok" });
  for (const s of [a, b]) {
    await s.next();
    const { events, dropped } = s.take();
    assert.equal(dropped, 0);
    assert.deepEqual(
      events.map((e) => [e.seq, e.type]),
      [
        [1, "session"],
        [2, "cell-started"],
        [3, "cell-ended"],
      ],
    );
  }
});

test("a subscriber that keeps up gets every chunk; a slow one gets them merged, in order", () => {
  const bus = new EventBus();
  const s = bus.subscribe();
  bus.emit(out(1, "a\n"));
  assert.equal(s.take().events.length, 1);
  bus.emit(out(1, "b\n"));
  bus.emit(out(1, "c\n"));
  bus.emit(out(1, "err\n", "stderr"));
  bus.emit(out(1, "d\n"));
  const texts = s
    .take()
    .events.map((e) => (e.type === "cell-output" && e.output.kind === "stream" ? e.output.text : ""));
  // Only adjacent output of the same stream merges: the order of stdout and stderr is kept.
  assert.deepEqual(texts, ["b\nc\n", "err\n", "d\n"]);
});

test("merged stream output keeps the latest lines and says how many were skipped", () => {
  const bus = new EventBus();
  const s = bus.subscribe({ maxLines: 3 });
  for (let i = 1; i <= 10; i++) bus.emit(out(7, `line ${i}\n`));
  const { events } = s.take();
  assert.equal(events.length, 1);
  const e = events[0] as StampedEvent & { type: "cell-output" };
  assert.deepEqual(e.output, {
    kind: "stream",
    name: "stdout",
    text: "line 8\nline 9\nline 10\n",
    skippedLines: 7,
  });
});

test("a subscriber that never reads holds at most maxQueued events; the dropped ones are counted", () => {
  const bus = new EventBus();
  const s = bus.subscribe({ maxQueued: 5, maxLines: 2, maxChars: 100 });
  for (let i = 0; i < 100_000; i++) {
    bus.emit({ type: "cell-started", cellRun: i, key, code: "x" });
    bus.emit(out(i, "x".repeat(50) + "\n".repeat(3)));
    assert.ok(s.size <= 5);
  }
  const { events, dropped } = s.take();
  assert.equal(events.length, 5);
  assert.equal(dropped, 200_000 - 5);
  // The newest are kept, in order.
  assert.deepEqual(
    events.map((e) => e.seq),
    [199_996, 199_997, 199_998, 199_999, 200_000],
  );
  // A single huge chunk is bounded too.
  bus.emit(out(1, `${"y".repeat(1000)}\nlast\n`));
  const big = s.take().events[0] as StampedEvent & { type: "cell-output" };
  assert.ok(big.output.kind === "stream" && big.output.text === "last\n" && big.output.skippedLines === 1);
});

test("a closed subscription gets nothing more and its waiter is released", async () => {
  const bus = new EventBus();
  const s = bus.subscribe();
  const waiting = s.next();
  s.close();
  await waiting;
  bus.emit({ type: "session", change: "idle", key });
  assert.equal(s.take().events.length, 0);
  assert.equal(bus.active, false);
});

test("a subscriber's queue is bounded in bytes too: large outputs push the oldest out, counted", () => {
  const bus = new EventBus();
  const s = bus.subscribe({ maxBytes: 1_000_000 });
  const png = "A".repeat(300_000);
  for (let i = 0; i < 50; i++) {
    bus.emit({
      type: "cell-output",
      cellRun: i,
      output: {
        kind: "display",
        mimeTypes: ["image/png", "text/plain"],
        text: "<Figure>",
        output: {
          output_type: "display_data",
          data: { "image/png": png, "text/plain": "<Figure>" },
          metadata: {},
        },
      },
    });
    assert.ok(s.queuedBytes <= 1_000_000, `${s.queuedBytes} bytes queued`);
  }
  const { events, dropped } = s.take();
  assert.equal(events.length, 3);
  assert.equal(dropped, 47);
  assert.deepEqual(
    events.map((e) => e.type === "cell-output" && e.cellRun),
    [47, 48, 49],
  );
  assert.equal(s.queuedBytes, 0);
});

test("a MIME bundle over the bound keeps its text/plain and names what was left out", () => {
  const small = { "text/plain": "<Figure>", "image/png": "iVBOR" };
  assert.deepEqual(boundBundle(small, 100), { data: small });
  const big = { "text/plain": ["<Figure size ", "640x480>"], "image/png": "A".repeat(3 * 2 ** 20) };
  const bounded = boundBundle(big);
  assert.deepEqual(bounded.omitted, [{ mime: "image/png", bytes: 3 * 2 ** 20 }]);
  assert.deepEqual(bounded.data, {
    "text/plain":
      "<Figure size 640x480>\n[left out of the view: image/png (3.0 MiB); the notebook file or the call's result has it]",
  });
});
