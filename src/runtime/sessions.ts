/**
 * KernelSessions: the map of kept kernel sessions (docs/kernel-state.md).
 *
 * - `session` mode: sessions keyed by (session id, cwd) — or any key, e.g. a notebook path — at
 *   most `maxSessions` (default 4). A new one evicts the least recently used idle session; when all
 *   are busy it waits (deadline and abort honoured) for one to become idle. Running sessions are
 *   never evicted.
 * - `per-call` mode: a private session for one call, shut down in `finally`.
 * - A sweep every `sweepIntervalMs` (30 s, timer unref'd) disposes dead sessions and those idle for
 *   more than `idleTimeoutMs` (5 min).
 * - A session shut down by the sweep or by eviction leaves a record (RetiredSession); the next call
 *   on the same key gets a fresh kernel and its lease carries that record, so the tool can say the
 *   state is gone, why and when. Python sessions and notebook kernels share the one limit.
 * - A call whose deadline passes while it waits for a free slot fails with SlotWaitTimeoutError,
 *   which names the sessions holding the slots.
 * - The first lease of a session carries the host variables withheld from its kernel's environment
 *   (names only), so the tool can say so once per session (docs/secrets.md).
 */
import type { ExecuteOptions, Kernel } from "../kernel/types.js";
import { CallTimeoutError, type Deadline, raceDeadline } from "./deadline.js";
import type { KernelEnv } from "./env.js";
import { type SlotHolder, SlotWaitTimeoutError } from "./errors.js";
import { displayEventOutput, iopubEventOutput } from "./event-output.js";
import type { EventBus, SessionChange } from "./events.js";
import type { QueueHolder } from "./queue.js";
import {
  type CallContext,
  KernelSession,
  type KernelStarter,
  keyText,
  type NamedSessionStart,
  type RetiredSession,
  SessionClosedError,
  type SessionExecuteResult,
  type SessionKey,
  type SessionSpec,
  type StateLoss,
  sessionKey,
} from "./session.js";
import type { WidgetStates } from "./widget-state.js";

export type SessionMode = "session" | "per-call";

const MAX_RETIRED = 256;

export interface SessionCallOptions extends CallContext {
  mode?: SessionMode;
  /** Restart the kernel (fresh state) before running fn (the tool: before its first cell; docs/python-tool.md). */
  reset?: boolean;
  /**
   * What this call is, for the calls that wait behind it: a call whose wait for the session's queue
   * times out gets its holder's tag back (QueueWaitTimeoutError); the runtime only hands it back.
   */
  tag?: object;
  /**
   * Told when the call starts to wait for its turn in the session's queue, with a probe of who
   * holds it now, and told `undefined` once it has its turn (a text about a call still waiting).
   */
  onQueue?: (holder: (() => QueueHolder | undefined) | undefined) => void;
}

export { type QueueHolder, QueueWaitTimeoutError } from "./queue.js";
export type { RetiredSession, StateLoss } from "./session.js";

/**
 * A kept session as it is now, for a listing (docs/kernels-tool.md): values only, tools/ words them.
 */
export interface KeptSessionState {
  readonly key: SessionKey;
  readonly spec: SessionSpec;
  /** A kernel was started for it (false: its first call is still starting one). */
  readonly started: boolean;
  /** Its kernel is alive (false before the start, or when it died while unused). */
  readonly alive: boolean;
  /** Not alive, but only its connection was lost (its gateway stayed unreachable): the next call joins it again. */
  readonly disconnected?: boolean;
  /** Where its kernel runs, once started. */
  readonly backend?: "local" | "gateway";
  /** The gateway's id for its kernel (gateway kernels). */
  readonly kernelId?: string;
  /** The call holding its queue now (undefined: none; the runtime only hands back its tag). */
  readonly holder?: QueueHolder;
  /** The tags of the calls waiting behind the holder, first in line first. */
  readonly waiting: readonly (object | undefined)[];
  /** When its last call ended, or the current one began (ms since the epoch). */
  readonly lastUsed: number;
  /** The memory its kernel uses now (bytes), when it can be read here (local kernels). */
  readonly memoryBytes?: number;
}

/** What fn gets: the session's kernel and an execute with the restart/retry rules. */
export interface SessionLease {
  readonly key: SessionKey;
  readonly spec: SessionSpec;
  readonly mode: SessionMode;
  /**
   * This call started the session's kernel (a new session, a reset, or after a retirement): it holds
   * no state from earlier calls.
   */
  readonly kernelStarted: boolean;
  /** The kept session this key had before, shut down by the sweep or eviction (reported once). */
  readonly replaced?: RetiredSession;
  /**
   * A loss of the kernel's state since the last lease (during an earlier call, or a restart on
   * request): this result says it at its top (reported once, here).
   */
  readonly stateLoss?: StateLoss;
  /** The latest loss of state on this session, even when reported before (a reset forgets it). */
  readonly lastLoss?: StateLoss;
  /**
   * This call lost the kernel's state (its own result says how): the next lease of this session
   * carries `loss`, so the next result says it too (a per-call session has no next lease).
   */
  recordLoss(loss: StateLoss): void;
  /**
   * The kept session shut down to make room for this one (the least recently used idle one, its
   * state gone), when this call took its slot: its result names it.
   */
  readonly evicted?: RetiredSession;
  /** A named session on a gateway: how its kernel was had this time (re-attached or new). */
  readonly named?: NamedSessionStart;
  /**
   * The first call on this session (a new one, or one that replaced a retired one; every per-call
   * session): once-per-session notes belong to its result. A reset or a restart after a death
   * keeps the session.
   */
  readonly firstLease: boolean;
  /** Host variables withheld from the kernel's environment as secrets (names, sorted). */
  readonly withheldEnv: readonly string[];
  /** The session's cwd does not exist where its kernel runs; the kernel works in `actual`. */
  readonly cwdMissing?: { requested: string; actual: string };
  /** The live kernel (after start/restart/init). */
  kernel(): Kernel;
  /**
   * The notebook cells recorded as run in the current kernel since it started or restarted (the
   * caller adds to it); undefined when unknown (a re-attached named kernel). A restart empties it.
   */
  cellsRun(): Set<string> | undefined;
  /** The current kernel's widgets (a restart empties them); undefined when cellsRun is. */
  widgets(): WidgetStates | undefined;
  execute(code: string, options?: LeaseExecuteOptions): Promise<SessionExecuteResult>;
}

/** An execution's options, and the notebook cell it runs (its id, for the runtime's events). */
export interface LeaseExecuteOptions extends ExecuteOptions {
  cellId?: string;
}

/** Code as a cell-started event carries it (a person reads it; a huge cell is cut). */
const MAX_EVENT_CODE = 20_000;

export interface KernelSessionsOptions {
  maxSessions?: number;
  idleTimeoutMs?: number;
  sweepIntervalMs?: number;
}

/** The kept-kernel limits these options give (the defaults: 4 kernels, 5 minutes idle). */
export function keptLimits(options: KernelSessionsOptions = {}): {
  maxSessions: number;
  idleTimeoutMs: number;
} {
  return {
    maxSessions: Math.max(1, options.maxSessions ?? 4),
    idleTimeoutMs: options.idleTimeoutMs ?? 5 * 60_000,
  };
}

export class KernelSessions {
  readonly maxSessions: number;
  readonly idleTimeoutMs: number;
  private readonly sessions = new Map<string, KernelSession>();
  private readonly idleWaiters = new Set<() => void>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly pendingShutdowns = new Set<Promise<void>>();
  /** Sessions shut down while unused, by key, until a new session takes the key (bounded). */
  private readonly retired = new Map<string, RetiredSession>();
  private closed = false;

  constructor(
    private readonly starter: KernelStarter,
    private readonly envFor: (spec: SessionSpec) => KernelEnv,
    options: KernelSessionsOptions = {},
    /** Where the sessions' events go (docs/view.md, "Events"); none: not told. */
    private readonly events?: EventBus,
  ) {
    ({ maxSessions: this.maxSessions, idleTimeoutMs: this.idleTimeoutMs } = keptLimits(options));
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 30_000);
    this.sweeper.unref();
  }

  /** Keys of the kept sessions, least recently used first. */
  keys(): SessionKey[] {
    return [...this.sessions.values()].sort((a, b) => a.lastUsed - b.lastUsed).map((s) => s.key);
  }

  get(key: SessionKey): KernelSession | undefined {
    return this.sessions.get(keyText(key));
  }

  /** Every kept session as it is now, in the order they were made (per-call sessions are not kept). */
  list(): KeptSessionState[] {
    return [...this.sessions.values()].map((s) => {
      const kernel = s.currentKernel;
      const memoryBytes = kernel?.isAlive() ? kernel.memoryBytes?.() : undefined;
      return {
        key: s.key,
        spec: s.spec,
        started: s.started,
        alive: s.isAlive(),
        ...(kernel?.isDisconnected?.() ? { disconnected: true } : {}),
        ...(kernel ? { backend: kernel.backend } : {}),
        ...(kernel?.kernelId ? { kernelId: kernel.kernelId } : {}),
        ...(s.lock.holder ? { holder: s.lock.holder } : {}),
        waiting: s.lock.waitingTags,
        lastUsed: s.lastUsed,
        ...(memoryBytes !== undefined ? { memoryBytes } : {}),
      };
    });
  }

  /** Runs fn with exclusive use of the session's kernel (its FIFO turn), under one deadline. */
  async withSession<T>(
    spec: SessionSpec,
    options: SessionCallOptions,
    fn: (lease: SessionLease) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new SessionClosedError();
    const mode = options.mode ?? "session";
    const ctx: CallContext = { deadline: options.deadline, signal: options.signal };
    if (mode === "per-call") {
      const session = new KernelSession(
        { ...spec, key: { kind: "per-call", of: spec.key ?? sessionKey(spec.sessionId, spec.cwd) } },
        this.starter,
        this.envFor(spec),
      );
      try {
        return await this.run(session, mode, options, ctx, fn);
      } finally {
        await session.dispose();
      }
    }
    const session = await this.acquireSession(spec, ctx);
    let release: (() => void) | undefined;
    try {
      options.onQueue?.(() => session.lock.holder);
      // A call that must wait is told to the bus once it is in the line (so a listing then counts
      // it), and again if it leaves the line without its turn; one that gets its turn is "busy".
      const queued = session.lock.busy;
      const turn = session.lock.acquire(ctx.deadline, ctx.signal, options.tag);
      if (queued) this.tell(session, "queued");
      try {
        release = await turn;
      } finally {
        options.onQueue?.(undefined);
        if (queued && !release && this.sessions.get(keyText(session.key)) === session)
          this.tell(session, "unqueued");
      }
      this.tell(session, "busy");
      return await this.run(session, mode, options, ctx, fn);
    } finally {
      release?.();
      if (release && this.sessions.get(keyText(session.key)) === session) this.tell(session, "idle");
      session.refs--;
      session.lastUsed = Date.now();
      this.notifyIdle();
    }
  }

  private async run<T>(
    session: KernelSession,
    mode: SessionMode,
    options: SessionCallOptions,
    ctx: CallContext,
    fn: (lease: SessionLease) => Promise<T>,
  ): Promise<T> {
    const fresh = !session.started;
    if (options.reset) await session.reset(ctx);
    await session.ready(ctx);
    if (fresh && session.started) this.tell(session, "started");
    else if (options.reset) this.tell(session, "restarted");
    // A named session that re-attached to its kernel holds the earlier calls' state.
    const named = fresh ? session.named : undefined;
    const kernelStarted = (fresh && !named?.reattached) || options.reset === true;
    const replaced = session.replaced;
    session.replaced = undefined;
    const stateLoss = session.unreadLoss;
    session.unreadLoss = undefined;
    const evicted = session.evicted;
    session.evicted = undefined;
    const firstLease = !session.leased;
    session.leased = true;
    return fn({
      key: session.key,
      spec: session.spec,
      mode,
      kernelStarted,
      replaced,
      ...(stateLoss ? { stateLoss } : {}),
      ...(session.lastLoss ? { lastLoss: session.lastLoss } : {}),
      ...(evicted ? { evicted } : {}),
      recordLoss: (loss) => {
        if (mode === "per-call") return;
        session.unreadLoss = loss;
        session.lastLoss = loss;
      },
      named,
      firstLease,
      withheldEnv: session.withheldEnv,
      cwdMissing: session.cwdMissing,
      kernel: () => session.currentKernel!,
      cellsRun: () => session.cellsRun,
      widgets: () => session.widgets,
      execute: (code, execOptions) =>
        this.observed(session, code, execOptions ?? {}, (o) => session.execute(code, ctx, o)),
    });
  }

  private tell(session: KernelSession, change: SessionChange): void {
    this.events?.emit({ type: "session", change, key: session.key });
  }

  /** Runs one execution, telling the bus its start, its output as it comes, its end (docs/view.md). */
  private async observed(
    session: KernelSession,
    code: string,
    options: LeaseExecuteOptions,
    run: (options: ExecuteOptions) => Promise<SessionExecuteResult>,
  ): Promise<SessionExecuteResult> {
    const bus = this.events;
    const { cellId, ...execOptions } = options;
    if (!bus?.active) return run(execOptions);
    const cellRun = bus.nextCellRun();
    bus.emit({
      type: "cell-started",
      cellRun,
      key: session.key,
      code: code.length > MAX_EVENT_CODE ? code.slice(0, MAX_EVENT_CODE) : code,
      ...(cellId ? { cellId } : {}),
    });
    let status: "ok" | "error" | "aborted" = "aborted";
    let executionCount: number | null | undefined;
    try {
      const result = await run({
        ...execOptions,
        onChunk: (text, kind) => {
          // Errors go as whole outputs from onIOPub below.
          if (kind !== "error")
            bus.emit({
              type: "cell-output",
              cellRun,
              output: { kind: "stream", name: kind, text, skippedLines: 0 },
            });
          execOptions.onChunk?.(text, kind);
        },
        onDisplay: (d) => {
          bus.emit({ type: "cell-output", cellRun, output: displayEventOutput(d) });
          execOptions.onDisplay?.(d);
        },
        onIOPub: (msg) => {
          const output = iopubEventOutput(msg);
          if (output) bus.emit({ type: "cell-output", cellRun, output });
          execOptions.onIOPub?.(msg);
        },
      });
      status = result.status;
      executionCount = result.executionCount;
      for (const e of result.events) {
        if (e.kind === "died-during-code") {
          this.tell(session, "died");
          if (e.restarted) this.tell(session, "restarted");
        } else if (e.kind === "connection-lost") this.tell(session, "disconnected");
        else if (e.kind === "reconnected") this.tell(session, "reconnected");
        else this.tell(session, "restarted");
      }
      return result;
    } finally {
      bus.emit({
        type: "cell-ended",
        cellRun,
        status,
        ...(executionCount !== undefined ? { executionCount } : {}),
      });
    }
  }

  /** Finds or creates the session and takes a reference on it (so it cannot be evicted). */
  private async acquireSession(spec: SessionSpec, ctx: CallContext): Promise<KernelSession> {
    const key = spec.key ?? sessionKey(spec.sessionId, spec.cwd);
    let waited = false;
    try {
      return await this.findOrCreate(spec, key, ctx, () => {
        waited = true;
      });
    } catch (err) {
      if (!waited || !(err instanceof CallTimeoutError)) throw err;
      throw new SlotWaitTimeoutError(err.seconds, this.maxSessions, this.holders());
    }
  }

  /** The busy kept sessions, least recently used first, as the tools name them. */
  private holders(): SlotHolder[] {
    return [...this.sessions.values()]
      .filter((s) => s.busy)
      .sort((a, b) => a.lastUsed - b.lastUsed)
      .map(
        (s): SlotHolder =>
          s.key.kind === "notebook"
            ? { kind: "notebook", path: s.key.path }
            : { kind: "python", session: s.spec.sessionId, cwd: s.spec.cwd },
      );
  }

  private async findOrCreate(
    spec: SessionSpec,
    key: SessionKey,
    ctx: CallContext,
    onWait: () => void,
  ): Promise<KernelSession> {
    const text = keyText(key);
    for (;;) {
      // a deadline that passes while every slot is busy is a slot wait, also before the first wait
      const full = !this.sessions.has(text) && this.sessions.size >= this.maxSessions;
      if (full && [...this.sessions.values()].every((s) => s.busy)) onWait();
      ctx.deadline.check(ctx.signal);
      const existing = this.sessions.get(text);
      if (existing) {
        existing.refs++;
        existing.lastUsed = Date.now();
        return existing;
      }
      const evicted = this.sessions.size < this.maxSessions ? undefined : this.evictOne();
      if (evicted !== false) {
        const session = new KernelSession({ ...spec, key }, this.starter, this.envFor(spec));
        if (evicted) session.evicted = evicted;
        session.replaced = this.retired.get(text);
        this.retired.delete(text);
        session.refs++;
        this.sessions.set(text, session);
        return session;
      }
      onWait();
      await this.waitForIdle(ctx.deadline, ctx.signal);
    }
  }

  /**
   * Disposes the least recently used idle session: false when every session is busy; else its
   * record when its state is gone (undefined: it had none to lose, or a named kernel lives on), for
   * the result of the call that took its slot.
   */
  private evictOne(): RetiredSession | undefined | false {
    let victim: KernelSession | undefined;
    for (const s of this.sessions.values()) {
      if (!s.busy && (!victim || s.lastUsed < victim.lastUsed)) victim = s;
    }
    if (!victim) return false;
    return this.retire(victim, "evicted");
  }

  /** Drops an unused session and remembers why, for the next call on its key; returns that record. */
  private retire(session: KernelSession, why: RetiredSession["why"]): RetiredSession | undefined {
    let record: RetiredSession | undefined;
    // A named session's kernel is only detached (it lives on): its state is not gone, so no record.
    if (session.started && !session.spec.named) {
      const text = keyText(session.key);
      record = {
        key: session.key,
        why,
        at: Date.now(),
        lastUsed: session.lastUsed,
        maxSessions: why === "evicted" ? this.maxSessions : undefined,
        ...(why === "idle" ? { idleTimeoutMs: this.idleTimeoutMs } : {}),
      };
      this.retired.delete(text);
      this.retired.set(text, record);
      // Keep the newest records only (a long-lived host may retire thousands of keys).
      for (const k of this.retired.keys()) {
        if (this.retired.size <= MAX_RETIRED) break;
        this.retired.delete(k);
      }
    }
    this.drop(session, why === "evicted" ? "evicted" : why === "died" ? "died" : "closed");
    return record;
  }

  private drop(session: KernelSession, change: SessionChange = "closed"): void {
    const text = keyText(session.key);
    if (session.started && this.sessions.get(text) === session) this.tell(session, change);
    if (this.sessions.get(text) === session) this.sessions.delete(text);
    const p = session.dispose().finally(() => this.pendingShutdowns.delete(p));
    this.pendingShutdowns.add(p);
  }

  private waitForIdle(deadline: Deadline, signal?: AbortSignal): Promise<void> {
    let wake!: () => void;
    const idle = new Promise<void>((resolve) => {
      wake = resolve;
    });
    this.idleWaiters.add(wake);
    return raceDeadline(idle, deadline, signal, () => this.idleWaiters.delete(wake)).finally(() =>
      this.idleWaiters.delete(wake),
    );
  }

  private notifyIdle(): void {
    const waiters = [...this.idleWaiters];
    this.idleWaiters.clear();
    for (const w of waiters) w();
  }

  /** Disposes dead sessions and sessions idle for longer than idleTimeoutMs (docs/kernel-state.md). */
  sweep(now = Date.now()): SessionKey[] {
    const removed: SessionKey[] = [];
    for (const s of [...this.sessions.values()]) {
      if (s.busy) continue;
      const dead = s.started && !s.isAlive();
      if (dead || !s.started || now - s.lastUsed > this.idleTimeoutMs) {
        removed.push(s.key);
        this.retire(s, dead ? "died" : "idle");
      }
    }
    if (removed.length) this.notifyIdle();
    return removed;
  }

  /** After EMFILE/ENFILE, let go of every idle session's kernel before a retry (docs/python-tool.md). */
  async releaseIdle(): Promise<void> {
    for (const s of [...this.sessions.values()]) if (!s.busy) this.retire(s, "evicted");
    await Promise.allSettled([...this.pendingShutdowns]);
    this.notifyIdle();
  }

  /** Shuts every kernel down (busy ones too) and stops the sweep. */
  async dispose(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const s of [...this.sessions.values()]) this.drop(s);
    await Promise.allSettled([...this.pendingShutdowns]);
  }
}
