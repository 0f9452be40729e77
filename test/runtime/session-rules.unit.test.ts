/**
 * The session rules (docs/kernel-state.md) on kernel stand-ins (./fake-kernel.ts), in milliseconds:
 * at most maxSessions kept (the least recently used idle one evicted, a busy one never), waiting for
 * a free slot within the deadline, the idle sweep, FIFO turns on one session, and the restart rules.
 * test/runtime/sessions.test.ts runs each rule end to end on real kernels (kernel tier).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { EventBus } from "../../src/runtime/events.js";
import {
  Deadline,
  KernelSessions,
  type SessionCallOptions,
  SlotWaitTimeoutError,
  sessionKey,
  TooManyRestartsError,
} from "../../src/runtime/index.js";
import { keyText } from "../../src/runtime/session.js";
import { type FakeKernel, FakeStarter } from "./fake-kernel.js";

let open: KernelSessions[] = [];
afterEach(async () => {
  await Promise.all(open.map((s) => s.dispose()));
  open = [];
});

function sessions(starter: FakeStarter, options: ConstructorParameters<typeof KernelSessions>[2] = {}) {
  const s = new KernelSessions(starter.start, starter.env, options);
  open.push(s);
  return s;
}

/** One call on session `id`: runs `code`, returns its lease facts and result. */
function call(s: KernelSessions, id: string, code: string, options: Partial<SessionCallOptions> = {}) {
  return s.withSession(
    { sessionId: id, cwd: "/w" },
    { deadline: new Deadline(60), ...options },
    async (lease) => {
      const r = await lease.execute(code);
      return { lease, r, kernel: lease.kernel() as FakeKernel };
    },
  );
}

const ids = (s: KernelSessions) => s.keys().map((k) => (k.kind === "python" ? k.sessionId : k.kind));

describe("the session limit", () => {
  test("a fifth session evicts the least recently used idle one; its next lease says so, with the limit", async (t) => {
    // "Least recently used" goes by Date.now(): a clock that moves 1 ms between calls keeps them apart.
    t.mock.timers.enable({ apis: ["Date"], now: 1_000_000 });
    const starter = new FakeStarter();
    const s = sessions(starter);
    for (const id of ["a", "b", "c", "d"]) {
      await call(s, id, `x = ${id}`);
      t.mock.timers.tick(1);
    }
    await call(s, "a", "touch"); // b is now the least recently used
    t.mock.timers.tick(1);
    await call(s, "e", "new");
    assert.deepEqual(ids(s).sort(), ["a", "c", "d", "e"]);
    assert.equal(
      starter.kernels.find((k) => k.id.endsWith(":b"))?.shutDown,
      true,
      "b's kernel was shut down",
    );
    const back = await call(s, "b", "again");
    assert.equal(back.lease.replaced?.why, "evicted");
    assert.equal(back.lease.replaced?.maxSessions, 4);
    assert.equal(back.lease.kernelStarted, true);
    assert.deepEqual(back.kernel.ran, ["again"], "a fresh kernel: b's earlier state is gone");
    const later = await call(s, "b", "once more");
    assert.equal(later.lease.replaced, undefined, "the record is reported once");
  });

  test("a running session is never evicted, however long unused before", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter, { maxSessions: 2 });
    const running = call(s, "old", "hold old");
    await starter.whenHolding("old");
    await call(s, "b", "1");
    await call(s, "c", "2"); // evicts b, the only idle one, not the older but running "old"
    assert.deepEqual(ids(s).sort(), ["c", "old"]);
    starter.release("old");
    assert.equal((await running).r.text, "ran hold old");
  });

  test("when every slot is busy a new session waits for one to become idle", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter, { maxSessions: 2 });
    const a = call(s, "a", "hold a");
    const b = call(s, "b", "hold b");
    await Promise.all([starter.whenHolding("a"), starter.whenHolding("b")]);
    const c = call(s, "c", "c runs");
    // c cannot start while both are busy: b finishing frees a slot (b, now idle, is evicted)
    starter.release("b");
    await b;
    const done = await c;
    assert.equal(done.r.text, "ran c runs");
    assert.deepEqual(ids(s).sort(), ["a", "c"]);
    assert.deepEqual(
      starter.log.filter((l) => !l.includes("hold a")),
      ["k1:b: hold b", "k2:c: c runs"],
    );
    starter.release("a");
    await a;
  });

  test("the wait for a slot ends at the call's deadline, naming the sessions holding the slots", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter, { maxSessions: 1 });
    const a = call(s, "a", "hold a");
    await starter.whenHolding("a");
    const expired = new Deadline(1, Date.now() - 1000); // passed already: no timer races the check
    await assert.rejects(call(s, "b", "never", { deadline: expired }), (err: unknown) => {
      assert.ok(err instanceof SlotWaitTimeoutError);
      assert.equal(err.maxSessions, 1);
      assert.deepEqual(err.holders, [{ kind: "python", session: "a", cwd: "/w" }]);
      return true;
    });
    assert.ok(!starter.log.some((l) => l.includes("never")), "the waiting call ran nothing");
    starter.release("a");
    await a;
  });
});

describe("the sweep", () => {
  test("disposes sessions idle past the limit and dead ones, keeps busy ones, and says why next time", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter, { idleTimeoutMs: 1000 });
    await call(s, "idle", "1");
    const dead = await call(s, "dead", "2");
    const busy = call(s, "busy", "hold busy");
    await starter.whenHolding("busy");
    dead.kernel.kill();
    const now = Date.now();
    assert.deepEqual(
      s.sweep(now),
      [sessionKey("dead", "/w")],
      "within the idle limit only the dead one goes",
    );
    assert.deepEqual(
      s.sweep(now + 1001),
      [sessionKey("idle", "/w")],
      "past it the idle one goes, never the busy one",
    );
    assert.deepEqual(ids(s), ["busy"]);
    const again = await call(s, "idle", "3");
    assert.equal(again.lease.replaced?.why, "idle");
    assert.equal(again.lease.replaced?.idleTimeoutMs, 1000);
    const revived = await call(s, "dead", "4");
    assert.equal(revived.lease.replaced?.why, "died");
    starter.release("busy");
    await busy;
  });
});

describe("one session's turns", () => {
  test("concurrent calls on one session run one at a time, in call order", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    const first = call(s, "q", "hold first");
    await starter.whenHolding("first");
    const rest = Array.from({ length: 20 }, (_, i) => call(s, "q", `call ${i}`));
    starter.release("first");
    await Promise.all([first, ...rest]);
    assert.deepEqual(starter.log, [
      "k0:q: hold first",
      ...Array.from({ length: 20 }, (_, i) => `k0:q: call ${i}`),
    ]);
    assert.equal(starter.kernels.length, 1, "one kernel served them all");
  });

  test("a caller that gives up while queued leaves the line; the others keep their order", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    const first = call(s, "q", "hold first");
    await starter.whenHolding("first");
    const quitter = new AbortController();
    const gaveUp = call(s, "q", "never", { signal: quitter.signal });
    const next = call(s, "q", "next");
    quitter.abort(new Error("gave up"));
    await assert.rejects(gaveUp);
    starter.release("first");
    await Promise.all([first, next]);
    assert.deepEqual(starter.log, ["k0:q: hold first", "k0:q: next"]);
  });
});

describe("the queue on the event stream", () => {
  test("a call that waits is told when it queues and when it leaves the line; the listing counts it at each", async () => {
    const starter = new FakeStarter();
    const bus = new EventBus();
    const s = new KernelSessions(starter.start, starter.env, {}, bus);
    open.push(s);
    // What a listing says at the moment each session event is told (a viewer's listing follows it).
    const seen: string[] = [];
    let wake: (() => void) | undefined;
    bus.listen((e) => {
      if (e.type !== "session") return;
      const listed = s.list().find((x) => keyText(x.key) === keyText(e.key));
      seen.push(`${e.change} waiting=${listed?.waiting.length}`);
      wake?.();
    });
    /** The session events from `from` on, once there are `n` of them. */
    const told = async (from: number, n: number) => {
      while (seen.length < from + n) await new Promise<void>((r) => (wake = r));
      return seen.slice(from);
    };
    const first = call(s, "q", "hold first");
    await starter.whenHolding("first");
    assert.deepEqual(await told(0, 2), ["busy waiting=0", "started waiting=0"]);
    const quitter = new AbortController();
    const gaveUp = call(s, "q", "never", { signal: quitter.signal });
    assert.deepEqual(
      await told(2, 1),
      ["queued waiting=1"],
      "told once in the line, the listing counting it",
    );
    const next = call(s, "q", "next");
    assert.deepEqual(await told(3, 1), ["queued waiting=2"]);
    quitter.abort(new Error("gave up"));
    await assert.rejects(gaveUp);
    assert.deepEqual(await told(4, 1), ["unqueued waiting=1"]);
    starter.release("first");
    await Promise.all([first, next]);
    // The next call's turn comes as the first one lets go: "idle" already lists it out of the line.
    assert.deepEqual(await told(5, 3), ["idle waiting=0", "busy waiting=0", "idle waiting=0"]);
    // A call that finds the session free never queues.
    await call(s, "q", "alone");
    assert.deepEqual(await told(8, 2), ["busy waiting=0", "idle waiting=0"]);
  });
});

describe("the restart rules", () => {
  test("a kernel that dies while its code runs is restarted, and the code is not run again", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    await call(s, "r", "x = 1");
    const died = await call(s, "r", "die");
    assert.deepEqual(died.r.events, [{ kind: "died-during-code", reason: "exit code 1", restarted: true }]);
    assert.equal(starter.log.filter((l) => l.endsWith("die")).length, 1, "run once");
    const next = await call(s, "r", "after");
    assert.deepEqual(next.r.events, []);
    assert.deepEqual(next.kernel.ran, ["after"], "fresh state after the restart");
  });

  test("a kernel found dead when the request is sent is restarted and the request sent once more", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    await s.withSession({ sessionId: "r", cwd: "/w" }, { deadline: new Deadline(60) }, async (lease) => {
      (lease.kernel() as FakeKernel).kill();
      // the session checked liveness before this lease; the kernel died since
      const r = await lease.execute("retried");
      assert.deepEqual(
        r.events.map((e) => e.kind),
        ["restarted-dead-kernel"],
      );
      assert.equal(r.text, "ran retried");
    });
    assert.equal(starter.log.filter((l) => l.endsWith("retried")).length, 1);
  });

  test("a kernel that keeps dying before any code starts fails with the too-many-restarts error; the session recovers", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    await call(s, "r", "fine");
    starter.dieBeforeStart = true;
    await assert.rejects(call(s, "r", "never runs"), TooManyRestartsError);
    assert.ok(!starter.log.some((l) => l.endsWith("never runs")));
    starter.dieBeforeStart = false;
    const back = await call(s, "r", "back");
    assert.equal(back.r.text, "ran back");
  });

  test("a deliberate reset gives fresh state and does not count as a crash", async () => {
    const starter = new FakeStarter();
    const s = sessions(starter);
    await call(s, "r", "x = 1");
    const reset = await call(s, "r", "after reset", { reset: true });
    assert.equal(reset.lease.kernelStarted, true);
    assert.deepEqual(reset.kernel.ran, ["after reset"]);
    assert.deepEqual(reset.r.events, []);
  });
});
