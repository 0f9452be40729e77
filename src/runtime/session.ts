/**
 * One kernel session: a kernel, its FIFO queue, and the restart rules (docs/kernel-state.md).
 *
 * - A session found dead before an execution is restarted first.
 * - A kernel found dead when the request was to be sent is restarted and the request sent once
 *   more: nothing of it ran, so nothing happens twice.
 * - A kernel that dies once the request was sent is restarted (fresh state) and the code is NOT run
 *   again: it may have run (a dying kernel can take its busy/execute_input messages with it), its
 *   side effects may have happened, and running it again could repeat them or kill the new kernel.
 * - Two restarts in a row with no execution starting in between fail with TooManyRestartsError
 *   (a kernel that keeps dying at start). Deliberate restarts (`reset`) do not count.
 * What happened is reported as typed SessionEvents; tools/ words them.
 * After every start or restart the init script runs again (cwd, env, sys.path, prelude).
 */
import {
  type DeathCause,
  type FailureReport,
  failureReport,
  type KernelDeath,
  KernelFailureError,
} from "../kernel/errors.js";
import {
  type ExecuteOptions,
  type ExecuteResult,
  type Kernel,
  type KernelLimitHit,
  speaksPython,
} from "../kernel/types.js";
import { CallAbortedError, CallTimeoutError, type Deadline } from "./deadline.js";
import type { KernelEnv } from "./env.js";
import { DeadKernelNotRestartedError, KernelUnreachableError, type UnusedDeath } from "./errors.js";
import { cwdMissingFrom, initScript } from "./init.js";
import { FifoLock } from "./queue.js";
import { WidgetStates } from "./widget-state.js";

export const TOO_MANY_RESTARTS = "Python kernel restarted too many times in this session";

export class TooManyRestartsError extends Error {
  constructor() {
    super(TOO_MANY_RESTARTS);
    this.name = "TooManyRestartsError";
  }
}

/** The session was shut down (runtime disposed, session evicted) while a call needed it. */
export class SessionClosedError extends Error {
  constructor() {
    super("the kernel session was shut down");
    this.name = "SessionClosedError";
  }
}

/** The init script (cwd, env, sys.path, prelude) failed in a new kernel. */
export class InitScriptError extends Error {
  constructor(readonly why: string) {
    super(`the kernel's init script failed (${why})`);
    this.name = "InitScriptError";
  }
}

export interface SessionSpec {
  /** What the session is kept by; by default the python tool's (sessionId, cwd). */
  key?: SessionKey;
  sessionId: string;
  cwd: string;
  kernelName?: string;
  /** Load the prelude helpers into the kernel (default true; a notebook run may want a bare kernel). */
  prelude?: boolean;
  /**
   * A named session on a gateway (docs/backends.md "Named sessions"): its kernel outlives this
   * process; when the session is dropped here its kernel is detached, not shut down.
   */
  named?: string;
}

/** How a named session got its kernel: joined the one an earlier call left running, or a new one. */
export interface NamedSessionStart {
  name: string;
  /** The gateway's id for the kernel. */
  kernelId: string;
  /** Joined the running kernel recorded for the name (its state is there). */
  reattached: boolean;
  /** The kernel the name had before, found ended (its state is gone): why and when. */
  gone?: RetiredSession;
}

/** What a starter may return besides a bare Kernel: how a named session got it. */
export interface StartedKernel {
  kernel: Kernel;
  named?: NamedSessionStart;
}

/** How the session gets a kernel (the runtime adds env, interpreter, EMFILE retry). */
export type KernelStarter = (
  spec: SessionSpec,
  deadline: Deadline,
  signal?: AbortSignal,
) => Promise<Kernel | StartedKernel>;

export interface CallContext {
  deadline: Deadline;
  signal?: AbortSignal;
}

/** What the session did to its kernel around one execution, in order. */
export type SessionEvent =
  /** The kernel was found dead before this execution and restarted first (state lost). */
  | ({ kind: "restarted-dead-kernel" } & Partial<UnusedDeath>)
  /**
   * The kernel's connection had been lost (`at`, `reason`, `cause`: its gateway stayed unreachable)
   * and was made again before this execution: the same process answered, its state is there.
   * `busy`: the server reported it busy (a cell sent before the loss may still be running; this
   * execution waits for it on the kernel).
   */
  | ({ kind: "reconnected"; busy: boolean } & UnusedDeath)
  /**
   * The connection to the kernel was lost while this execution was under way (its gateway stayed
   * unreachable past the reconnect window): what the code did after that is not known here. The
   * kernel may still run on its server with its state; the next execution connects again.
   * `codeStarted`: the kernel had said it started the code.
   */
  | { kind: "connection-lost"; reason: string; cause?: DeathCause; codeStarted: boolean }
  /** The kernel died before the code started; it was restarted and the code sent again. */
  | { kind: "retried-before-start"; reason: string; cause?: DeathCause }
  /**
   * The kernel died while the code ran; it was restarted (state lost) and the code not run again.
   * `limit`: a resource limit of the kernel ended it (docs/isolation.md, "Limits").
   */
  | {
      kind: "died-during-code";
      reason: string;
      /** The typed failure that ended the kernel, when there is one (kernel/errors.ts). */
      cause?: DeathCause;
      restarted: boolean;
      /** Why restarting it failed: the failure when typed (tools words it), else the error's message. */
      restartError?: string;
      restartFailure?: FailureReport;
      limit?: KernelLimitHit;
    };

export interface SessionExecuteResult extends ExecuteResult {
  events: SessionEvent[];
}

export class KernelSession {
  readonly key: SessionKey;
  readonly lock = new FifoLock();
  lastUsed = Date.now();
  /** Callers holding or waiting for this session (it cannot be evicted while > 0). */
  refs = 0;
  /** The session this key had before, shut down while unused; reported by the next lease. */
  replaced?: RetiredSession;
  /** A loss of state during a call or on request (StateLoss); reported by the next lease, once. */
  unreadLoss?: StateLoss;
  /**
   * The latest loss of state on this session, kept after it was reported (a reset forgets it): the
   * cell that caused it is left out of hints to run cells again (docs/kernel-state.md).
   */
  lastLoss?: StateLoss;
  /** The kept session whose slot this new session took (evicted for it); reported by its first lease. */
  evicted?: RetiredSession;
  /** A lease was handed out (the first one carries the once-per-session notes). */
  leased = false;
  /** Host variables withheld from this kernel's environment (names). */
  readonly withheldEnv: readonly string[];
  /**
   * The session's cwd does not exist where the kernel runs (a remote gateway's machine): the kernel
   * stayed in `actual`. Set by the init script after each start.
   */
  cwdMissing?: { requested: string; actual: string };
  /** A named session: how its current kernel was had (re-attached or new); see NamedSessionStart. */
  named?: NamedSessionStart;
  /**
   * Notebook cells (keys the caller chooses, e.g. cell ids) that ran in the current kernel since it
   * started or restarted; undefined when that is unknown (a re-attached named kernel).
   */
  cellsRun?: Set<string>;
  /** The current kernel's widgets, as notebook runs in it saw them; undefined with cellsRun. */
  widgets?: WidgetStates;
  private readonly env: Record<string, string>;
  private kernel?: Kernel;
  private initialised = false;
  private restartsInRow = 0;
  /** A dead kernel was restarted by ready(); the next execution's result reports it (docs/kernel-state.md). */
  private restartedUnreported = false;
  /** How the kernel died while unused, when it did (from its death listener): said with the restart. */
  private unusedDeath?: UnusedDeath;
  private reportedDeath?: UnusedDeath;
  /** When and why the kernel's connection was lost (its gateway stayed unreachable); see reconnect(). */
  private disconnection?: UnusedDeath;
  /** The kernel was joined again by ready(); the next execution's result reports it. */
  private reconnectedUnreported?: SessionEvent & { kind: "reconnected" };
  private disposed = false;

  constructor(
    readonly spec: SessionSpec,
    private readonly starter: KernelStarter,
    kernelEnv: KernelEnv,
  ) {
    this.key = spec.key ?? sessionKey(spec.sessionId, spec.cwd);
    this.env = kernelEnv.env;
    this.withheldEnv = kernelEnv.withheld;
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
    if (this.disposed) throw new SessionClosedError();
    let restarted = false;
    if (!this.kernel) {
      this.kernel = await this.start(ctx);
      // A re-attached named session's kernel was set up by the call that started it: its state
      // (cwd, env, helpers, the user's variables) is there.
      this.initialised = this.named?.reattached === true;
      if (this.named?.gone && !this.replaced) this.replaced = this.named.gone;
    } else if (!this.kernel.isAlive() && (await this.reconnect(ctx))) {
      // joined again: its state kept, or (a new process) lost and said so
      restarted = this.restartedUnreported;
    } else if (!this.kernel.isAlive()) {
      const death = this.unusedDeath;
      try {
        await this.restartAfterDeath(ctx);
      } catch (err) {
        // Not a restart the caller can word alone: the state was lost before this call.
        if (
          err instanceof SessionClosedError ||
          err instanceof CallTimeoutError ||
          err instanceof CallAbortedError
        )
          throw err;
        throw new DeadKernelNotRestartedError(death, err);
      }
      this.reportedDeath = death;
      restarted = true;
      this.restartedUnreported = true;
    }
    if (!this.initialised) await this.init(ctx);
    return { kernel: this.kernel!, restarted };
  }

  /**
   * A kernel whose connection was lost (its gateway stayed unreachable) is joined again on its
   * server (docs/backends.md, "Across a real network"): true when it answered — the same process,
   * its state kept (said by the next result), or a new one the server started meanwhile (state
   * lost, said as a restart); false when the server no longer has it (the caller starts a new one).
   * Still unreachable: KernelUnreachableError, and nothing is started.
   */
  private async reconnect(ctx: CallContext): Promise<boolean> {
    const kernel = this.kernel!;
    if (!kernel.isDisconnected?.() || !kernel.reconnect) return false;
    ctx.deadline.check(ctx.signal);
    const lost = this.disconnection ??
      this.unusedDeath ?? { at: Date.now(), reason: "the connection to the kernel was lost" };
    try {
      const r = await kernel.reconnect();
      this.disconnection = undefined;
      this.unusedDeath = undefined;
      if (r.sameProcess) {
        this.reconnectedUnreported = { kind: "reconnected", busy: r.busy, ...lost };
        return true;
      }
      this.initialised = false; // a fresh process: set up again, as after a restart
      this.reportedDeath = {
        at: lost.at,
        reason: "the server restarted the kernel while the connection was lost",
        cause: { kind: "restarted-while-away" },
      };
      this.restartedUnreported = true;
      return true;
    } catch (err) {
      const failure = err instanceof KernelFailureError ? err.failure : undefined;
      if (failure?.kind !== "gone") throw new KernelUnreachableError(lost, err);
      this.disconnection = undefined;
      this.unusedDeath = {
        at: lost.at,
        reason: `the gateway at ${failure.gateway} no longer has kernel ${failure.kernelId} (found when this call connected again after the connection was lost)`,
      };
      return false;
    }
  }

  /** Deliberate restart (`reset`): fresh state, not counted as a crash. */
  async reset(ctx: CallContext): Promise<void> {
    this.lastLoss = undefined;
    if (!this.kernel) return void (await this.ready(ctx));
    await this.restartKernel(ctx);
    await this.init(ctx);
  }

  /** Runs code with the restart/retry rules. Throws TooManyRestartsError, CallTimeoutError, … */
  async execute(code: string, ctx: CallContext, options: ExecuteOptions = {}): Promise<SessionExecuteResult> {
    const events: SessionEvent[] = [];
    // A request sent ahead (docs/runs.md, "Pipelined cells") went to the kernel as it was then: it
    // is taken over as it is, not sent again to a kernel started in its place (a kernel lost since
    // is lost while it could run: attempt() says so, as for any code that was sent).
    const ahead = options.ahead !== undefined && this.kernel !== undefined;
    if ((!ahead && (await this.ready(ctx)).restarted) || this.restartedUnreported) {
      events.push({ kind: "restarted-dead-kernel", ...(this.reportedDeath ?? {}) });
    }
    if (this.reconnectedUnreported) events.push(this.reconnectedUnreported);
    this.reconnectedUnreported = undefined;
    this.restartedUnreported = false;
    this.reportedDeath = undefined;
    let result = await this.attempt(code, ctx, options);
    if (result.kernelDied && this.kernel!.isDisconnected?.()) {
      // Not a death: the kernel may still run there; the next execution joins it again. The code is
      // not sent again (it may be running).
      const { reason, cause } = deathOf(result);
      this.disconnection = { at: Date.now(), reason, ...(cause ? { cause } : {}) };
      this.unusedDeath = undefined;
      events.push({
        kind: "connection-lost",
        reason,
        ...(cause ? { cause } : {}),
        codeStarted: result.codeStarted,
      });
      return { ...result, events };
    }
    if (result.kernelDied && !result.codeStarted) {
      // Nothing of this request ran: a fresh kernel may take it (once).
      const death = deathOf(result);
      this.unusedDeath = undefined;
      await this.restartAfterDeath(ctx);
      await this.init(ctx);
      events.push({ kind: "retried-before-start", ...death });
      result = await this.attempt(code, ctx, options);
      if (result.kernelDied && !result.codeStarted) {
        this.restartsInRow = 0; // the next call starts over (a dead kernel is restarted first)
        throw new TooManyRestartsError();
      }
    }
    if (result.codeStarted) this.restartsInRow = 0; // the kernel works: its crashes are the code's
    if (result.kernelDied) {
      this.unusedDeath = undefined; // said by this call's event, not again by the next call's
      const event: SessionEvent & { kind: "died-during-code" } = {
        kind: "died-during-code",
        ...deathOf(result),
        restarted: false,
      };
      const limit = deathLimit(result);
      if (limit) event.limit = limit;
      events.push(event);
      try {
        await this.restartAfterDeath(ctx);
        await this.init(ctx);
        event.restarted = true;
      } catch (err) {
        // The next call restarts it (found dead); the result says this one did not.
        const report = failureReport(err);
        if (report) event.restartFailure = report;
        else event.restartError = (err as Error).message;
      }
    }
    return { ...result, events };
  }

  private async attempt(code: string, ctx: CallContext, options: ExecuteOptions): Promise<ExecuteResult> {
    // A request sent ahead is running or queued: past the deadline it is interrupted (timeoutMs 1),
    // not left running unwatched.
    if (!options.ahead) ctx.deadline.check(ctx.signal);
    const result = await this.kernel!.execute(code, {
      ...options,
      signal: ctx.signal,
      timeoutMs: Math.max(1, ctx.deadline.remainingMs()),
    });
    if (result.kernelRestarted) this.initialised = false; // interrupted kernel stayed busy
    return result;
  }

  private async restartAfterDeath(ctx: CallContext): Promise<void> {
    if (this.restartsInRow >= 1) {
      this.restartsInRow = 0;
      throw new TooManyRestartsError();
    }
    // Counted once it happened: a restart the call's deadline or a failed start prevented is not
    // one, and the next call's restart must not be refused as a second.
    await this.restartKernel(ctx);
    this.restartsInRow++;
  }

  private async restartKernel(ctx: CallContext): Promise<void> {
    ctx.deadline.check(ctx.signal);
    if (this.disposed) throw new SessionClosedError();
    this.initialised = false;
    this.unusedDeath = undefined;
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
    if (this.disposed) throw new SessionClosedError();
    const started = await this.starter(this.spec, ctx.deadline, ctx.signal);
    const kernel = "kernel" in started ? started.kernel : started;
    if (this.disposed) {
      await this.release(kernel);
      throw new SessionClosedError();
    }
    this.named = "kernel" in started ? started.named : undefined;
    this.unusedDeath = undefined;
    kernel.onDeath((reason, _limit, cause) => {
      if (this.kernel !== kernel && this.kernel !== undefined) return;
      this.unusedDeath = { at: Date.now(), reason, ...(cause ? { cause } : {}) };
      if (cause?.kind === "unreachable") this.disconnection = this.unusedDeath;
    });
    this.cellsRun = undefined; // known again once init() sets up a fresh kernel
    this.widgets = undefined;
    return kernel;
  }

  /** Lets go of a kernel: a named session's is detached (it lives on), any other is shut down. */
  private async release(kernel: Kernel): Promise<void> {
    if (this.spec.named && kernel.detach) await kernel.detach().catch(() => {});
    else await kernel.shutdown().catch(() => {});
  }

  private async init(ctx: CallContext): Promise<void> {
    ctx.deadline.check(ctx.signal);
    // The init script is Python: a kernel of another language gets nothing sent; its process
    // started in the session's cwd with its env (docs/kernels.md, "Kernels of other languages").
    this.cwdMissing = speaksPython(this.kernel!.info) ? await this.runInitScript(ctx) : undefined;
    this.initialised = true;
    this.cellsRun = new Set(); // a fresh kernel (start, restart or reset): no cell has run in it
    this.widgets = new WidgetStates(); // and it holds no widget
  }

  /** Runs the init script; where the kernel stayed when the session's cwd is missing. */
  private async runInitScript(ctx: CallContext): Promise<KernelSession["cwdMissing"]> {
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
      throw new InitScriptError(why);
    }
    const stayedIn = cwdMissingFrom(r.text);
    return stayedIn === undefined ? undefined : { requested: this.spec.cwd, actual: stayedIn };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const k = this.kernel;
    this.kernel = undefined;
    if (k) await this.release(k);
  }
}

/**
 * What a kept session is kept by: the python tool's session id in a working directory, a notebook
 * (its real path), a named session on a gateway, or a per-call session made for one of those.
 */
export type SessionKey =
  | { kind: "python"; sessionId: string; cwd: string }
  | { kind: "notebook"; path: string }
  | { kind: "named"; name: string }
  | { kind: "per-call"; of: SessionKey };

/** The python tool's key for a session id in a working directory. */
export function sessionKey(sessionId: string, cwd: string): SessionKey {
  return { kind: "python", sessionId, cwd };
}

/** A notebook's key: its real path. */
export function notebookKey(path: string): SessionKey {
  return { kind: "notebook", path };
}

/** A named session's key (kept on a gateway across processes). */
export function namedKey(name: string): SessionKey {
  return { kind: "named", name };
}

/** The key as one text, for a Map (built from the typed value; nothing decodes it). */
export function keyText(key: SessionKey): string {
  switch (key.kind) {
    case "python":
      return JSON.stringify(["python", key.sessionId, key.cwd]);
    case "notebook":
      return JSON.stringify(["notebook", key.path]);
    case "named":
      return JSON.stringify(["named", key.name]);
    case "per-call":
      return JSON.stringify(["per-call", keyText(key.of)]);
  }
}

/** The limit that ended the kernel, when its backend could tell. */
function deathLimit(r: ExecuteResult): KernelLimitHit | undefined {
  for (const n of r.notices) if (n.kind === "kernel-died" && n.limit) return n.limit;
  return undefined;
}

/** Why the kernel died, as the execution saw it. */
function deathOf(r: ExecuteResult): KernelDeath {
  for (const n of r.notices) {
    if (n.kind === "kernel-died" || n.kind === "kernel-not-running")
      return { reason: n.reason, ...(n.cause ? { cause: n.cause } : {}) };
  }
  return { reason: r.error?.value ?? "unknown" };
}

/**
 * A loss of the kernel's state during a call, while the session stays kept: the kernel was
 * restarted (or died) under a call, or on request. The session carries it until the next lease
 * reads it, so the next result on the session says it at its top, once, whoever caused it and
 * whether or not the causing call's own result (which says it too) was read
 * (docs/kernel-state.md, "What the model is told when state is lost"). A kept session shut down
 * while unused (sweep, eviction) is a RetiredSession instead: the next call gets a new session.
 */
export interface StateLoss {
  /**
   * interrupt: a cell interrupted on request (the runs or kernels tool) did not stop, so the kernel
   * was restarted; cancel: the same after the caller cancelled the call; timeout: the same when the
   * call's timeout passed; restart: restarted on request (the kernels tool); death: the kernel died
   * while the call used it.
   */
  cause: "interrupt" | "cancel" | "timeout" | "restart" | "death";
  /** When the call ended, or the restart was done (ms since the epoch). */
  at: number;
  /** The call as its tool names it ("python call", "run of a.ipynb"); none for a restart. */
  call?: string;
  /** The run the call was (docs/runs.md), when it is one and was named. */
  runId?: string;
  /** The cell that was running, as the call's result named it (its label: "cell 2"). */
  cell?: string;
  /** That cell's key in the session's record of cells run (a notebook cell; see cellsRun). */
  cellKey?: string;
  /** interrupt, cancel: why the call was stopped, as its abort reason said it. */
  reason?: string;
  /** timeout: the call's timeout (seconds). */
  seconds?: number;
  /** restart: asked by a person in the view (nbagent view) rather than by the agent. */
  by?: "view";
  /** death: why the kernel died, and whether it was restarted at once (else the next call does). */
  death?: KernelDeath & { restarted: boolean };
}

/** Why a kept session was shut down while no call was using it. */
export interface RetiredSession {
  key: SessionKey;
  /**
   * idle: the sweep, after idleTimeoutMs unused; evicted: its slot went to another session; died: its
   * kernel died while unused (found by the sweep). Named sessions on a gateway (named-sessions.ts):
   * idle as above (by any process's sweep); gone: the gateway no longer had the kernel (cause
   * unknown: culled, gateway restarted, …); killed: ended on request (`nbagent sessions kill`).
   */
  why: "idle" | "evicted" | "died" | "gone" | "killed";
  /** When it was shut down (ms since the epoch). */
  at: number;
  /** When it was last used before that. */
  lastUsed: number;
  /** For eviction: the limit that forced it. */
  maxSessions?: number;
  /** For idle: the rule that applied (unused this long → shut down). */
  idleTimeoutMs?: number;
}
