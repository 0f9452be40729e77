/**
 * One kernel session: a kernel, its FIFO queue, and the restart rules (S18–S20).
 *
 * - A session found dead before an execution is restarted first (S18).
 * - A kernel that dies during an execution is restarted and the request run once more; the result
 *   says so (S19).
 * - More than one restart in a row fails with TOO_MANY_RESTARTS; a successful execution resets the
 *   count (S20). Deliberate restarts (`reset`) do not count.
 * After every start or restart the init script runs again (cwd, env, sys.path, prelude).
 */
import type { ExecuteOptions, ExecuteResult, Kernel } from "../kernel/types.js";
import { CallAbortedError, type Deadline } from "./deadline.js";
import { initScript } from "./init.js";
import { FifoLock } from "./queue.js";

export const TOO_MANY_RESTARTS = "Python kernel restarted too many times in this session";

export class TooManyRestartsError extends Error {
  constructor() {
    super(TOO_MANY_RESTARTS);
    this.name = "TooManyRestartsError";
  }
}

export interface SessionSpec {
  /** Map key; by default `${sessionId}\0${cwd}`. A notebook session uses its own key. */
  key?: string;
  sessionId: string;
  cwd: string;
  kernelName?: string;
  /** Load the prelude helpers into the kernel (default true; a notebook run may want a bare kernel). */
  prelude?: boolean;
}

/** How the session gets a kernel (the runtime adds env, interpreter, EMFILE retry). */
export type KernelStarter = (spec: SessionSpec, deadline: Deadline, signal?: AbortSignal) => Promise<Kernel>;

export interface CallContext {
  deadline: Deadline;
  signal?: AbortSignal;
}

export interface SessionExecuteResult extends ExecuteResult {
  /** The kernel died during the first attempt; it was restarted and the code run again (S19). */
  retriedAfterDeath: boolean;
  /** The kernel was found dead before this execution and restarted first (S18). */
  restartedBeforeRun: boolean;
}

export class KernelSession {
  readonly key: string;
  readonly lock = new FifoLock();
  lastUsed = Date.now();
  /** Callers holding or waiting for this session (it cannot be evicted while > 0). */
  refs = 0;
  private kernel?: Kernel;
  private initialised = false;
  private restartsInRow = 0;
  /** A dead kernel was restarted by ready(); the next execution's result reports it (S18). */
  private restartedUnreported = false;
  private disposed = false;

  constructor(
    readonly spec: SessionSpec,
    private readonly starter: KernelStarter,
    private readonly env: Record<string, string>,
  ) {
    this.key = spec.key ?? sessionKey(spec.sessionId, spec.cwd);
  }

  get busy(): boolean {
    return this.refs > 0 || this.lock.busy;
  }

  get started(): boolean {
    return this.kernel !== undefined;
  }

  get currentKernel(): Kernel | undefined {
    return this.kernel;
  }

  isAlive(): boolean {
    return this.kernel?.isAlive() ?? false;
  }

  /** Makes sure a live, initialised kernel is there; returns true when a dead one was restarted. */
  async ready(ctx: CallContext): Promise<{ kernel: Kernel; restarted: boolean }> {
    if (this.disposed) throw new Error("Error: this kernel session was shut down; call again.");
    let restarted = false;
    if (!this.kernel) {
      this.kernel = await this.start(ctx);
      this.initialised = false;
    } else if (!this.kernel.isAlive()) {
      await this.restartAfterDeath(ctx);
      restarted = true;
      this.restartedUnreported = true;
    }
    if (!this.initialised) await this.init(ctx);
    return { kernel: this.kernel!, restarted };
  }

  /** Deliberate restart (`reset`): fresh state, not counted as a crash. */
  async reset(ctx: CallContext): Promise<void> {
    if (!this.kernel) return void (await this.ready(ctx));
    await this.restartKernel(ctx);
    await this.init(ctx);
  }

  /** Runs code with the restart/retry rules. Throws TooManyRestartsError, CallTimeoutError, … */
  async execute(code: string, ctx: CallContext, options: ExecuteOptions = {}): Promise<SessionExecuteResult> {
    await this.ready(ctx);
    const restarted = this.restartedUnreported;
    this.restartedUnreported = false;
    const first = await this.attempt(code, ctx, options);
    if (!first.kernelDied) return this.succeeded(first, false, restarted);
    options.onChunk?.(
      "\n[The Python kernel died during this cell; restarting it and running the cell again.]\n",
      "notice",
    );
    await this.restartAfterDeath(ctx);
    await this.init(ctx);
    const second = await this.attempt(code, ctx, options);
    if (second.kernelDied) {
      this.restartsInRow = 0; // the next call starts over (S18 restarts the dead kernel)
      throw new TooManyRestartsError();
    }
    return this.succeeded(second, true, restarted);
  }

  private async attempt(code: string, ctx: CallContext, options: ExecuteOptions): Promise<ExecuteResult> {
    ctx.deadline.check(ctx.signal);
    const onChunk = options.onChunk;
    const seconds = ctx.deadline.seconds;
    const result = await this.kernel!.execute(code, {
      ...options,
      // The kernel times this execution with what is left of the call's deadline; the model is told
      // the call's own timeout (S30).
      onChunk:
        onChunk &&
        ((text, kind) =>
          onChunk(
            kind === "notice"
              ? text.replace(
                  /Command timed out after [\d.]+ seconds/,
                  `Command timed out after ${seconds} seconds`,
                )
              : text,
            kind,
          )),
      signal: ctx.signal,
      timeoutMs: Math.max(1, ctx.deadline.remainingMs()),
    });
    if (result.kernelRestarted) this.initialised = false; // interrupted kernel stayed busy (S29)
    return result;
  }

  private succeeded(r: ExecuteResult, retried: boolean, before: boolean): SessionExecuteResult {
    this.restartsInRow = 0;
    return { ...r, retriedAfterDeath: retried, restartedBeforeRun: before };
  }

  private async restartAfterDeath(ctx: CallContext): Promise<void> {
    if (this.restartsInRow >= 1) {
      this.restartsInRow = 0;
      throw new TooManyRestartsError();
    }
    this.restartsInRow++;
    await this.restartKernel(ctx);
  }

  private async restartKernel(ctx: CallContext): Promise<void> {
    ctx.deadline.check(ctx.signal);
    if (this.disposed) throw new Error("Error: this kernel session was shut down; call again.");
    this.initialised = false;
    const old = this.kernel!;
    try {
      await old.restart();
      if (old.isAlive()) return;
    } catch {
      // fall through: replace the kernel
    }
    this.kernel = undefined;
    await old.shutdown().catch(() => {});
    this.kernel = await this.start(ctx);
  }

  /** Starts a kernel; one that arrives after dispose() is shut down at once (no orphan). */
  private async start(ctx: CallContext): Promise<Kernel> {
    if (this.disposed) throw new Error("Error: this kernel session was shut down; call again.");
    const kernel = await this.starter(this.spec, ctx.deadline, ctx.signal);
    if (this.disposed) {
      await kernel.shutdown().catch(() => {});
      throw new Error("Error: this kernel session was shut down; call again.");
    }
    return kernel;
  }

  private async init(ctx: CallContext): Promise<void> {
    ctx.deadline.check(ctx.signal);
    const r = await this.kernel!.execute(
      initScript(this.spec.cwd, this.env, this.spec.prelude === false ? "" : undefined),
      {
        silent: true,
        storeHistory: false,
        signal: ctx.signal,
        timeoutMs: Math.max(1, ctx.deadline.remainingMs()),
      },
    );
    if (r.cancelled && ctx.signal?.aborted) throw new CallAbortedError(ctx.signal.reason);
    if (r.timedOut) throw ctx.deadline.error();
    if (r.status !== "ok") {
      const why = r.error ? `${r.error.name}: ${r.error.value}` : r.text.trim() || r.status;
      throw new Error(
        `Error: the kernel's init script failed (${why}). Check the cwd exists and is readable.`,
      );
    }
    this.initialised = true;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const k = this.kernel;
    this.kernel = undefined;
    if (k) await k.shutdown().catch(() => {});
  }
}

export function sessionKey(sessionId: string, cwd: string): string {
  return `${sessionId}\0${cwd}`;
}
