/**
 * A kernel stand-in for the session rules (src/runtime/sessions.ts, session.ts, queue.ts): it
 * implements the Kernel interface the sessions get from their starter, and runs a tiny command
 * language instead of Python, in-process, so the rules (eviction, waiting for a slot, the sweep,
 * FIFO turns, restarts) are tested in milliseconds. The same rules run on real kernels, end to end,
 * in test/runtime/sessions.test.ts (kernel tier).
 *
 * Code a FakeKernel runs (one command per execution; the init script, sent silent, always succeeds):
 *   hold NAME     runs until the test calls `release(NAME)` (or the call's signal aborts)
 *   die           the kernel dies while running it (the code started)
 *   anything else ok, with the text `ran <code>`
 * A kernel can also be killed from outside (`kill()`): the next request finds it dead and nothing
 * of it runs. While `FakeStarter.dieBeforeStart` is set, every kernel dies just before each request
 * it is sent (a kernel that keeps dying before any code starts).
 */

import { emptyExecuteResult } from "../../src/kernel/execution.js";
import type {
  ExecuteOptions,
  ExecuteResult,
  Kernel,
  KernelDeathListener,
  KernelInfo,
} from "../../src/kernel/types.js";
import type { Deadline } from "../../src/runtime/deadline.js";
import type { KernelEnv } from "../../src/runtime/env.js";
import type { SessionSpec } from "../../src/runtime/session.js";

const INFO: KernelInfo = {
  protocolVersion: "5.3",
  implementation: "fake",
  languageName: "python",
  languageVersion: "3",
  language: "python",
  banner: "",
};

function result(partial: Partial<ExecuteResult>): ExecuteResult {
  return {
    ...emptyExecuteResult(),
    codeStarted: true,
    ...partial,
  };
}

export class FakeKernel implements Kernel {
  readonly backend = "local" as const;
  readonly info = INFO;
  /** Non-silent code this kernel ran, in order (its "state"; a restart empties it). */
  readonly ran: string[] = [];
  restarts = 0;
  shutDown = false;
  private alive = true;
  private busy = 0;
  private readonly listeners = new Set<KernelDeathListener>();

  constructor(
    readonly id: string,
    private readonly starter: FakeStarter,
  ) {}

  isAlive(): boolean {
    return this.alive;
  }

  isBusy(): boolean {
    return this.busy > 0;
  }

  onDeath(listener: KernelDeathListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The kernel process dies now (from outside). */
  kill(reason = "killed"): void {
    if (!this.alive) return;
    this.alive = false;
    for (const l of this.listeners) l(reason);
  }

  async execute(code: string, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    if (this.starter.dieBeforeStart && !options.silent) this.kill("exit code 1");
    if (!this.alive) {
      const notice = { kind: "kernel-not-running" as const, reason: "the kernel is not running" };
      return result({ status: "error", kernelDied: true, codeStarted: false, notices: [notice] });
    }
    if (options.silent) return result({});
    this.busy++;
    try {
      this.ran.push(code);
      this.starter.log.push(`${this.id}: ${code}`);
      const hold = /^hold (\S+)$/.exec(code);
      if (hold) {
        const released = await this.starter.held(hold[1], options.signal);
        if (!released) return result({ status: "aborted", cancelled: true });
      }
      if (code === "die") {
        this.kill("exit code 1");
        const notice = { kind: "kernel-died" as const, reason: "exit code 1", codeStarted: true };
        return result({ status: "error", kernelDied: true, notices: [notice] });
      }
      const text = `ran ${code}`;
      options.onChunk?.(text, "stdout");
      return result({ text });
    } finally {
      this.busy--;
    }
  }

  async interrupt(): Promise<void> {}

  async restart(): Promise<void> {
    this.restarts++;
    this.ran.length = 0;
    this.alive = true;
  }

  async shutdown(): Promise<void> {
    this.shutDown = true;
    this.alive = false;
  }
}

/** The sessions' KernelStarter: hands out FakeKernels and keeps what happened. */
export class FakeStarter {
  readonly kernels: FakeKernel[] = [];
  /** Every non-silent execution, `<kernel id>: <code>`, in the order they began. */
  readonly log: string[] = [];
  /** Every kernel dies just before each (non-silent) request: nothing of it runs. */
  dieBeforeStart = false;
  private readonly holds = new Map<
    string,
    {
      waiting: boolean;
      release: () => void;
      promise: Promise<void>;
      began: () => void;
      beginning: Promise<void>;
    }
  >();

  /** The KernelStarter to give KernelSessions. */
  readonly start = async (spec: SessionSpec, _deadline: Deadline): Promise<Kernel> => {
    const k = new FakeKernel(`k${this.kernels.length}:${spec.sessionId}`, this);
    this.kernels.push(k);
    return k;
  };

  /** The environment every session gets (none withheld). */
  readonly env = (): KernelEnv => ({ env: {}, withheld: [] });

  private hold(name: string) {
    let h = this.holds.get(name);
    if (!h) {
      let release!: () => void;
      let began!: () => void;
      const promise = new Promise<void>((r) => {
        release = r;
      });
      const beginning = new Promise<void>((r) => {
        began = r;
      });
      h = { waiting: false, release, promise, began, beginning };
      this.holds.set(name, h);
    }
    return h;
  }

  /** Resolves true once `release(name)` is called, false if the signal aborts first. */
  held(name: string, signal?: AbortSignal): Promise<boolean> {
    const h = this.hold(name);
    h.waiting = true;
    h.began();
    if (!signal) return h.promise.then(() => true);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => resolve(false);
      signal.addEventListener("abort", onAbort, { once: true });
      void h.promise.then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      });
    });
  }

  /** Lets `hold NAME` finish (before or after it started). */
  release(name: string): void {
    this.hold(name).release();
  }

  /** True once some kernel is running `hold NAME`. */
  holding(name: string): boolean {
    return this.holds.get(name)?.waiting ?? false;
  }

  /** Resolves when some kernel starts running `hold NAME`. */
  whenHolding(name: string): Promise<void> {
    return this.hold(name).beginning;
  }
}
