/**
 * One execution's lifecycle — the only place it lives; every backend runs executions through it.
 * Sends execute_request as a RequestFuture (future.ts: it routes this request's IOPub/shell/stdin
 * messages, and nothing else, here, and is done when both execute_reply and IOPub `status: idle`
 * for it arrived). Abort and the time limit (a signal, time-limits.ts) interrupt the
 * kernel, wait a bounded grace for idle, and restart the kernel if it stays busy; a kernel death
 * ends the execution promptly. Rules: docs/python-tool.md.
 */
import type { KernelClient } from "./client.js";
import { convertDisplay } from "./display.js";
import { type DeathCause, type KernelDeath, restartFailedDeath } from "./errors.js";
import type { RequestFuture } from "./future.js";
import { type ExecuteReplyContent, isMessageType } from "./messages.js";
import { deadlineSignal, type ScopedDeadline, TimeoutError } from "./time-limits.js";
import type {
  AheadRequestOptions,
  ExecuteOptions,
  ExecuteResult,
  ExecutionNotice,
  JupyterMessage,
  KernelErrorInfo,
  KernelLimitHit,
  ReplySeen,
  SentAhead,
} from "./types.js";

/**
 * How long an interrupted kernel may take to go idle before it is restarted (state lost). A first
 * interrupt in a fresh kernel formats its first traceback (~0.3 s unloaded); on a loaded 2-core
 * machine that took over 3 s, and a 3 s grace then threw away a working kernel's state.
 */
export const DEFAULT_INTERRUPT_GRACE_MS = 10_000;

/**
 * How long an interrupt waits for the kernel to begin the request (its `execute_input`) before it
 * is sent anyway (docs/runs.md, "Interrupting a request the kernel has not begun"): an ipykernel
 * ignores SIGINT between requests, so an interrupt sent while the request is still queued would be
 * lost and the cell, once begun, would run on until the grace restarts the kernel. A kernel that
 * announces no `execute_input` gets its interrupt after this long.
 */
export const INTERRUPT_BEFORE_BEGIN_MS = 500;
export const DEFAULT_REPLY_AFTER_IDLE_MS = 5000;
/** ipykernel's input_reply value for end-of-file: input() raises EOFError. */
const EOF_REPLY = "\x04";

/** What an execution needs from the kernel it runs on (implemented by ConnectedKernel). */
export interface ExecutionHost {
  readonly client: KernelClient;
  isAlive(): boolean;
  /** Why the kernel is dead, when it is. */
  death(): KernelDeath;
  /** Interrupt by the backend's means (control interrupt_request, SIGINT, REST). */
  interrupt(): Promise<void>;
  /** Kill and start the kernel again (state lost); rejects if it cannot. */
  forceRestart(): Promise<void>;
  /** Unexpected death of the kernel; returns an unsubscribe function. */
  onDeath(listener: (reason: string, limit?: KernelLimitHit, cause?: DeathCause) => void): () => void;
}

/** The execute_request an execution sends (stop_on_error: see the comment inside). */
function executeRequest(host: ExecutionHost, code: string, options: AheadRequestOptions): JupyterMessage {
  return host.client.factory.executeRequest(code, {
    silent: options.silent,
    storeHistory: options.storeHistory,
    allowStdin: options.stdinDisabled !== true,
    // nbagent never leaves a request queued behind one that may fail: a pipelined run sends the next
    // cell only once the reply of the one before says it may run (AheadRequest). So there is never a
    // queue worth aborting after an error; with stop_on_error the kernel would instead abort whatever
    // request arrives before its next loop turn (ipykernel's stop_on_error_timeout is 0 s) — under
    // load, the innocent next cell.
    stopOnError: false,
    ...(options.after && { metadata: { nbagent_after: options.after.msgId } }),
  });
}

/** Messages of a request sent ahead, kept for the execution that takes it over. */
type AheadEvent = { kind: "iopub" | "stdin" | "reply" | "done"; msg: JupyterMessage };

/** What an adopting execution hears of its request sent ahead. */
interface AheadHooks {
  onIOPub(msg: JupyterMessage): void;
  onStdin(msg: JupyterMessage): void;
  onReply(msg: JupyterMessage): void;
  onDone(reply: JupyterMessage): void;
}

/**
 * An execute_request sent ahead (`Kernel.sendAhead`, docs/runs.md "Pipelined cells"): its future
 * routes its messages (by msg_id, as any request's) into a list until an Execution takes it over
 * (`adopt`), which hears them in arrival order and then live. A loss of the kernel (death, restart,
 * shutdown) before that is kept as `lost`.
 */
export class AheadRequest implements SentAhead {
  readonly future: RequestFuture;
  /** The client it went through: a restart since gives the kernel another. */
  readonly client: KernelClient;
  readonly msgId: string;
  lost: { reason: string; limit?: KernelLimitHit; cause?: DeathCause } | undefined;
  private readonly kept: AheadEvent[] = [];
  private hooks: AheadHooks | undefined;
  private readonly unsubscribeDeath: () => void;

  constructor(
    host: ExecutionHost,
    readonly code: string,
    options: AheadRequestOptions = {},
  ) {
    const pass = (kind: AheadEvent["kind"]) => (msg: JupyterMessage) => {
      if (!this.hooks) this.kept.push({ kind, msg });
      else if (kind === "iopub") this.hooks.onIOPub(msg);
      else if (kind === "stdin") this.hooks.onStdin(msg);
      else if (kind === "reply") this.hooks.onReply(msg);
      else this.hooks.onDone(msg);
    };
    this.client = host.client;
    this.unsubscribeDeath = host.onDeath((reason, limit, cause) => {
      this.lost ??= { reason, ...(limit ? { limit } : {}), ...(cause ? { cause } : {}) };
    });
    const request = executeRequest(host, code, options);
    this.msgId = request.header.msg_id;
    this.future = host.client.future("shell", request, {
      onIOPub: pass("iopub"),
      onStdin: pass("stdin"),
      onReply: pass("reply"),
      onDone: pass("done"),
    });
  }

  /** Hands the request to `hooks`: what came so far at once, in order, then the rest as it comes. */
  adopt(hooks: AheadHooks): void {
    this.unsubscribeDeath();
    this.hooks = hooks;
    for (const { kind, msg } of this.kept.splice(0)) {
      if (kind === "iopub") hooks.onIOPub(msg);
      else if (kind === "stdin") hooks.onStdin(msg);
      else if (kind === "reply") hooks.onReply(msg);
      else hooks.onDone(msg);
    }
  }

  release(): void {
    this.unsubscribeDeath();
    this.future.dispose();
    this.kept.length = 0;
  }
}

/** An execution that has done nothing yet: ok, no output, its code not started. */
export function emptyExecuteResult(): ExecuteResult {
  return {
    status: "ok",
    executionCount: null,
    cancelled: false,
    timedOut: false,
    stdinRequested: false,
    kernelDied: false,
    kernelRestarted: false,
    displays: [],
    text: "",
    notices: [],
    codeStarted: false,
    durationMs: 0,
  };
}

/** Runs `code` on the host's kernel: the execution's lifecycle (module comment, Execution). */
export function runExecution(
  host: ExecutionHost,
  code: string,
  options: ExecuteOptions = {},
): Promise<ExecuteResult> {
  return new Execution(host, code, options).run();
}

/**
 * One execution, from its request to its result. Its steps: `run` sends the request (or ends at
 * once: a dead kernel, an aborted call); `onIOPub` / `onStdin` turn the kernel's messages into output
 * and answers; the end comes by `done` (reply and idle), `noReply`, `died`, or an abort or time
 * limit → `interrupt` → idle within the grace, else `stuckRestart`; `finish` settles it once.
 */
class Execution {
  private readonly started = performance.now();
  private readonly chunks: string[] = [];
  private readonly keepText: boolean;
  private readonly result = emptyExecuteResult();
  private resolve: (result: ExecuteResult) => void = () => {};
  private finished = false;
  private future: RequestFuture | undefined;
  private interrupting = false;
  /** This request's execute_input was heard: the kernel began it (an ipykernel then takes SIGINT). */
  private begun = false;
  /** The interrupt went to the kernel (at once, at the execute_input, or after INTERRUPT_BEFORE_BEGIN_MS). */
  private interruptSent = false;
  private interruptTimer: NodeJS.Timeout | undefined;
  /** The caller sent the next request once this one's reply came (ExecuteOptions.onReply). */
  private sentBehind = false;
  private inputRequests = 0;
  private graceTimer: NodeJS.Timeout | undefined;
  private replyTimer: NodeJS.Timeout | undefined;
  private timeLimit: ScopedDeadline | undefined;
  private unsubscribeDeath: () => void = () => {};
  /** When this request's last IOPub message arrived (a cell that sends nothing is silent since). */
  private lastHeard = performance.now();
  /** kernel_info on control, asked with the interrupt: slow (it finishes) or wedged (it cannot). */
  private probe: { future: RequestFuture; silentMs: number; replied: boolean; idle: boolean } | undefined;

  constructor(
    private readonly host: ExecutionHost,
    private readonly code: string,
    private readonly options: ExecuteOptions,
  ) {
    this.keepText = options.keepText ?? true;
  }

  run(): Promise<ExecuteResult> {
    return new Promise<ExecuteResult>((resolve) => {
      this.resolve = resolve;
      this.send();
    });
  }

  /** Sends the request, unless the kernel is dead or the call aborted already; arms the abort and the time limit. */
  private send(): void {
    const { host, options, result } = this;
    const signal = options.signal;
    if (options.ahead) {
      this.adopt(options.ahead as AheadRequest);
      return;
    }
    if (!host.isAlive()) {
      const death = host.death();
      this.died(death.reason, true, undefined, death.cause);
      return;
    }
    if (signal?.aborted) {
      result.cancelled = true;
      result.status = "aborted";
      this.finish();
      return;
    }
    this.arm();
    this.future = host.client.future("shell", executeRequest(host, this.code, options), {
      onIOPub: this.onIOPub,
      onStdin: this.onStdin,
      onReply: this.onReply,
      onDone: this.onDone,
    });
    // From here the code may run. A kernel that dies can take its busy/execute_input with it
    // (os._exit before its IOPub thread sent them), so only "not sent" proves it did not run.
    result.codeStarted = true;
  }

  /** Follows the kernel's death, the abort and the time limit (the time limit counts from here). */
  private arm(): void {
    const { host, options } = this;
    this.unsubscribeDeath = host.onDeath((reason, limit, cause) => this.died(reason, false, limit, cause));
    options.signal?.addEventListener("abort", this.onAbort, { once: true });
    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      const ms = options.timeoutMs;
      this.timeLimit = deadlineSignal(
        ms,
        () => new TimeoutError(ms, `the execution timed out after ${ms} ms`),
      );
      this.timeLimit.signal.addEventListener("abort", this.onTimeLimit, { once: true });
    }
  }

  /**
   * Takes over a request sent ahead: it was sent, so its code counts as started, and a kernel lost
   * since was lost while it could run. Its messages so far are heard first; an abort that came
   * before interrupts it now (it may be running).
   */
  private adopt(ahead: AheadRequest): void {
    const { host, result } = this;
    result.codeStarted = true;
    const lost: AheadRequest["lost"] =
      ahead.lost ?? (ahead.client !== host.client || !host.isAlive() ? host.death() : undefined);
    // A request that ended (reply and idle kept) before the kernel was lost is not the loss's.
    if (lost && !ahead.future.isDone) {
      ahead.release();
      this.died(lost.reason, false, lost.limit, lost.cause);
      return;
    }
    this.arm();
    this.future = ahead.future;
    ahead.adopt({
      onIOPub: this.onIOPub,
      onStdin: this.onStdin,
      onReply: this.onReply,
      onDone: this.onDone,
    });
    if (!this.finished && this.options.signal?.aborted) this.onAbort();
  }

  private readonly onDone = (reply: JupyterMessage): void => {
    if (!this.finished) this.done(reply);
  };

  /** The reply came (its idle may not have yet): the caller may send the next request now. */
  private readonly onReply = (msg: JupyterMessage): void => {
    if (this.finished || !this.options.onReply) return;
    const reply = msg.content as ExecuteReplyContent;
    const status = reply.status === "ok" && this.result.status === "error" ? "error" : reply.status;
    const next = (msg.metadata as { nbagent_next?: unknown } | undefined)?.nbagent_next;
    const seen: ReplySeen = { status, interrupted: this.interrupting };
    if (next === "run" || next === "abort") seen.next = next;
    if (this.options.onReply(seen) === true) this.sentBehind = true;
  };

  private emit(text: string, kind: "stdout" | "stderr" | "error"): void {
    if (!text) return;
    if (this.keepText) this.chunks.push(text);
    this.options.onChunk?.(text, kind);
  }

  private notice(n: ExecutionNotice): void {
    this.result.notices.push(n);
    this.options.onNotice?.(n);
  }

  /** Settles the execution once: releases its request, timers and listeners. */
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.future?.dispose();
    this.probe?.future.dispose();
    this.unsubscribeDeath();
    clearTimeout(this.graceTimer);
    clearTimeout(this.replyTimer);
    clearTimeout(this.interruptTimer);
    this.timeLimit?.signal.removeEventListener("abort", this.onTimeLimit);
    this.timeLimit?.dispose();
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.result.text = this.chunks.join("");
    this.result.durationMs = performance.now() - this.started;
    this.resolve(this.result);
  }

  private died(reason: string, before = false, limit?: KernelLimitHit, cause?: DeathCause): void {
    if (this.finished) return;
    const reply = this.future?.reply;
    // This code ended with its reply, and the next request was sent then: it is that one's death.
    if (reply && this.sentBehind) {
      this.done(reply);
      return;
    }
    const { result } = this;
    result.kernelDied = true;
    result.status = "error";
    result.error ??= { name: "KernelDied", value: reason, traceback: [] };
    const why = cause ? { cause } : {};
    this.notice(
      before
        ? { kind: "kernel-not-running", reason, ...why }
        : {
            kind: "kernel-died",
            reason,
            codeStarted: result.codeStarted,
            ...(limit ? { limit } : {}),
            ...why,
          },
    );
    this.finish();
  }

  /** execute_reply and this request's idle both arrived (the future's rule). */
  private done(replyMsg: JupyterMessage): void {
    const { result } = this;
    const reply = replyMsg.content as ExecuteReplyContent;
    result.replyDate = replyMsg.header.date || new Date().toISOString();
    result.executionCount = reply.execution_count ?? result.executionCount;
    if (result.status !== "error" || reply.status !== "ok") result.status = reply.status;
    if (reply.status === "error" && !result.error && reply.ename) {
      result.error = { name: reply.ename, value: reply.evalue ?? "", traceback: reply.traceback ?? [] };
    }
    this.finish();
  }

  /** Idle came, the reply never did: the kernel's request handler failed after running the code. */
  private readonly noReply = (): void => {
    if (this.finished || this.future?.reply) return;
    this.result.status = "error";
    this.result.error ??= { name: "NoReply", value: "the kernel went idle without replying", traceback: [] };
    this.notice({ kind: "no-reply" });
    this.finish();
  };

  /** The interrupt's grace passed with the kernel still busy: it is restarted (its state lost). */
  private async stuckRestart(): Promise<void> {
    if (this.finished) return;
    const { probe, result } = this;
    this.unsubscribeDeath(); // the restart ends the process on purpose
    this.future?.dispose(); // a late reply/idle from the old process must not finish this as a normal run
    // A kernel that answers on control but cannot finish even that request has stopped responding
    // (a healthy kernel running slow code answers and goes idle on control at once).
    if (probe?.replied && !probe.idle)
      this.notice({ kind: "kernel-unresponsive", silentMs: Math.round(probe.silentMs) });
    probe?.future.dispose();
    try {
      await this.host.forceRestart();
      result.kernelRestarted = true;
      result.status = "aborted";
      this.notice({ kind: "restarted-after-interrupt" });
      this.finish();
    } catch (err) {
      const death = restartFailedDeath("restart after a stuck interrupt failed", err);
      this.died(death.reason, false, undefined, death.cause);
    }
  }

  /** Interrupts once (abort or time limit), with a kernel_info on control to tell slow from wedged. */
  private interrupt(): void {
    if (this.interrupting || this.finished) return;
    this.interrupting = true;
    const { host } = this;
    const grace = this.options.interruptGraceMs ?? DEFAULT_INTERRUPT_GRACE_MS;
    this.graceTimer = setTimeout(() => void this.stuckRestart(), grace);
    const asked = { silentMs: performance.now() - this.lastHeard, replied: false, idle: false };
    const ask = host.client.future("control", host.client.factory.kernelInfoRequest(), {
      onReply: () => {
        asked.replied = true;
      },
      onIOPub: (msg) => {
        if (isMessageType(msg, "status") && msg.content.execution_state === "idle") asked.idle = true;
      },
    });
    this.probe = Object.assign(asked, { future: ask });
    if (this.begun) this.sendInterrupt();
    else
      this.interruptTimer = setTimeout(
        this.sendInterrupt,
        Math.min(this.options.interruptBeforeBeginMs ?? INTERRUPT_BEFORE_BEGIN_MS, grace / 2),
      );
  }

  /** The interrupt itself, once: when the kernel has begun the request, or when waiting for that ends. */
  private readonly sendInterrupt = (): void => {
    clearTimeout(this.interruptTimer);
    if (this.interruptSent || this.finished) return;
    this.interruptSent = true;
    this.host.interrupt().catch(() => {
      /* the grace timer restarts the kernel if the interrupt had no effect */
    });
  };

  /**
   * An abort or time limit after the reply that let the next request go: this code is over, and an
   * interrupt would stop the next one's. It ends now as its reply said (output after the reply that
   * has not come yet is left out); the next execution hears the abort itself.
   */
  private endAtReply(): boolean {
    const reply = this.future?.reply;
    if (!this.sentBehind || !reply) return false;
    this.done(reply);
    return true;
  }

  private readonly onAbort = (): void => {
    if (this.finished || this.endAtReply()) return;
    this.result.cancelled = true;
    this.interrupt();
  };

  private readonly onTimeLimit = (): void => {
    if (this.finished || this.endAtReply()) return;
    this.result.timedOut = true;
    this.notice({ kind: "timed-out", afterMs: (this.timeLimit!.signal.reason as TimeoutError).ms });
    this.interrupt();
  };

  /** This request's IOPub messages: output, displays, errors, status. */
  private readonly onIOPub = (msg: JupyterMessage): void => {
    if (this.finished) return;
    const { options, result } = this;
    this.lastHeard = performance.now();
    options.onIOPub?.(msg);
    if (isMessageType(msg, "stream")) {
      this.emit(msg.content.text, msg.content.name === "stderr" ? "stderr" : "stdout");
    } else if (isMessageType(msg, "status")) {
      if (msg.content.execution_state === "idle" && !this.future?.reply) {
        // Timers run before I/O in a loop turn: after a stall of the event loop the reply may
        // be waiting unread, so read what has arrived (two turns) before deciding.
        const check = () => setImmediate(() => setImmediate(this.noReply));
        this.replyTimer = setTimeout(check, options.replyAfterIdleMs ?? DEFAULT_REPLY_AFTER_IDLE_MS);
      }
    } else if (
      isMessageType(msg, "execute_result") ||
      isMessageType(msg, "display_data") ||
      isMessageType(msg, "update_display_data")
    ) {
      const { display, statusEvents } = convertDisplay(msg.header.msg_type as "display_data", msg.content);
      for (const e of statusEvents) options.onStatusEvent?.(e);
      if (display) {
        result.displays.push(display);
        options.onDisplay?.(display);
      }
    } else if (isMessageType(msg, "error")) {
      const c = msg.content;
      const error: KernelErrorInfo = { name: c.ename, value: c.evalue, traceback: c.traceback ?? [] };
      result.error = error;
      result.status = "error";
      this.emit(
        `${error.traceback.length ? error.traceback.join("\n") : `${error.name}: ${error.value}`}\n`,
        "error",
      );
    } else if (isMessageType(msg, "clear_output")) {
      options.onClearOutput?.(msg.content.wait);
    } else if (isMessageType(msg, "execute_input")) {
      result.executionCount = msg.content.execution_count ?? result.executionCount;
      this.begun = true;
      if (this.interrupting) this.sendInterrupt();
    }
  };

  private readonly onStdin = (msg: JupyterMessage): void => {
    if (!this.finished && isMessageType(msg, "input_request"))
      void this.answerInput(msg.header, msg.content.prompt, msg.content.password);
  };

  /** stdin is refused (docs/python-tool.md): '' once, then end-of-file; a host that allows it answers. */
  private async answerInput(
    parent: JupyterMessage["header"],
    prompt: string,
    password: boolean,
  ): Promise<void> {
    const { options } = this;
    let value = "";
    if (options.allowStdin && options.onInputRequest) {
      try {
        value = await options.onInputRequest(prompt, password);
      } catch {
        value = "";
      }
    } else if (++this.inputRequests === 1) {
      this.result.stdinRequested = true;
      this.notice({ kind: "stdin-refused", prompt });
    } else {
      value = EOF_REPLY; // asked again: input has ended (see ExecuteOptions.allowStdin)
    }
    if (!this.finished) this.host.client.send("stdin", this.host.client.factory.inputReply(value, parent));
  }
}
