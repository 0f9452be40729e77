/**
 * One execution's lifecycle — the only place it lives; every backend runs executions through it.
 * Sends execute_request as a RequestFuture (future.ts: it routes this request's IOPub/shell/stdin
 * messages, and nothing else, here, and is done when both execute_reply and IOPub `status: idle`
 * for it arrived). Abort and the time limit (a signal, signals.ts) interrupt the
 * kernel, wait a bounded grace for idle, and restart the kernel if it stays busy; a kernel death
 * ends the execution promptly. Rules: docs/python-tool.md.
 */
import type { KernelClient } from "./client.js";
import { convertDisplay } from "./display.js";
import { type DeathCause, type KernelDeath, restartFailedDeath } from "./errors.js";
import type { RequestFuture } from "./future.js";
import { type ExecuteReplyContent, isMessageType } from "./messages.js";
import { deadlineSignal, type ScopedDeadline, TimeoutError } from "./signals.js";
import type {
  ExecuteOptions,
  ExecuteResult,
  ExecutionNotice,
  JupyterMessage,
  KernelErrorInfo,
  KernelLimitHit,
} from "./types.js";

/**
 * How long an interrupted kernel may take to go idle before it is restarted (state lost). A first
 * interrupt in a fresh kernel formats its first traceback (~0.3 s unloaded); on a loaded 2-core
 * machine that took over 3 s, and a 3 s grace then threw away a working kernel's state.
 */
export const DEFAULT_INTERRUPT_GRACE_MS = 10_000;
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

export function runExecution(
  host: ExecutionHost,
  code: string,
  options: ExecuteOptions = {},
): Promise<ExecuteResult> {
  const started = performance.now();
  const chunks: string[] = [];
  const keepText = options.keepText ?? true;
  const result = emptyExecuteResult();
  const emit = (text: string, kind: "stdout" | "stderr" | "error") => {
    if (!text) return;
    if (keepText) chunks.push(text);
    options.onChunk?.(text, kind);
  };
  const notice = (n: ExecutionNotice) => {
    result.notices.push(n);
    options.onNotice?.(n);
  };

  return new Promise<ExecuteResult>((resolve) => {
    let finished = false;
    let future: RequestFuture | undefined;
    let interrupting = false;
    let inputRequests = 0;
    let graceTimer: NodeJS.Timeout | undefined;
    let replyTimer: NodeJS.Timeout | undefined;
    let timeLimit: ScopedDeadline | undefined;
    let unsubscribeDeath: () => void = () => {};
    /** When this request's last IOPub message arrived (a cell that sends nothing is silent since). */
    let lastHeard = performance.now();
    /** kernel_info on control, asked with the interrupt: slow (it finishes) or wedged (it cannot). */
    let probe: { future: RequestFuture; silentMs: number; replied: boolean; idle: boolean } | undefined;
    const signal = options.signal;

    const finish = () => {
      if (finished) return;
      finished = true;
      future?.dispose();
      probe?.future.dispose();
      unsubscribeDeath();
      clearTimeout(graceTimer);
      clearTimeout(replyTimer);
      timeLimit?.signal.removeEventListener("abort", onTimeLimit);
      timeLimit?.dispose();
      signal?.removeEventListener("abort", onAbort);
      result.text = chunks.join("");
      result.durationMs = performance.now() - started;
      resolve(result);
    };

    const died = (reason: string, before = false, limit?: KernelLimitHit, cause?: DeathCause) => {
      if (finished) return;
      result.kernelDied = true;
      result.status = "error";
      result.error ??= { name: "KernelDied", value: reason, traceback: [] };
      const why = cause ? { cause } : {};
      notice(
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
      finish();
    };

    /** execute_reply and this request's idle both arrived (the future's rule). */
    const done = (replyMsg: JupyterMessage) => {
      const reply = replyMsg.content as ExecuteReplyContent;
      result.replyDate = replyMsg.header.date || new Date().toISOString();
      result.executionCount = reply.execution_count ?? result.executionCount;
      if (result.status !== "error" || reply.status !== "ok") result.status = reply.status;
      if (reply.status === "error" && !result.error && reply.ename) {
        result.error = { name: reply.ename, value: reply.evalue ?? "", traceback: reply.traceback ?? [] };
      }
      finish();
    };

    /** Idle came, the reply never did: the kernel's request handler failed after running the code. */
    const noReply = () => {
      if (finished || future?.reply) return;
      result.status = "error";
      result.error ??= { name: "NoReply", value: "the kernel went idle without replying", traceback: [] };
      notice({ kind: "no-reply" });
      finish();
    };

    const stuckRestart = async () => {
      if (finished) return;
      unsubscribeDeath(); // the restart ends the process on purpose
      future?.dispose(); // a late reply/idle from the old process must not finish this as a normal run
      // A kernel that answers on control but cannot finish even that request has stopped responding
      // (a healthy kernel running slow code answers and goes idle on control at once).
      if (probe?.replied && !probe.idle)
        notice({ kind: "kernel-unresponsive", silentMs: Math.round(probe.silentMs) });
      probe?.future.dispose();
      try {
        await host.forceRestart();
        result.kernelRestarted = true;
        result.status = "aborted";
        notice({ kind: "restarted-after-interrupt" });
        finish();
      } catch (err) {
        const death = restartFailedDeath("restart after a stuck interrupt failed", err);
        died(death.reason, false, undefined, death.cause);
      }
    };

    const interrupt = () => {
      if (interrupting || finished) return;
      interrupting = true;
      const grace = options.interruptGraceMs ?? DEFAULT_INTERRUPT_GRACE_MS;
      graceTimer = setTimeout(() => void stuckRestart(), grace);
      const asked = { silentMs: performance.now() - lastHeard, replied: false, idle: false };
      const ask = host.client.future("control", host.client.factory.kernelInfoRequest(), {
        onReply: () => {
          asked.replied = true;
        },
        onIOPub: (msg) => {
          if (isMessageType(msg, "status") && msg.content.execution_state === "idle") asked.idle = true;
        },
      });
      probe = Object.assign(asked, { future: ask });
      host.interrupt().catch(() => {
        /* the grace timer restarts the kernel if the interrupt had no effect */
      });
    };

    function onAbort() {
      if (finished) return;
      result.cancelled = true;
      interrupt();
    }

    function onTimeLimit() {
      if (finished) return;
      result.timedOut = true;
      notice({ kind: "timed-out", afterMs: (timeLimit!.signal.reason as TimeoutError).ms });
      interrupt();
    }

    const onIOPub = (msg: JupyterMessage) => {
      if (finished) return;
      lastHeard = performance.now();
      options.onIOPub?.(msg);
      if (isMessageType(msg, "stream")) {
        emit(msg.content.text, msg.content.name === "stderr" ? "stderr" : "stdout");
      } else if (isMessageType(msg, "status")) {
        if (msg.content.execution_state === "idle" && !future?.reply) {
          // Timers run before I/O in a loop turn: after a stall of the event loop the reply may
          // be waiting unread, so read what has arrived (two turns) before deciding.
          const check = () => setImmediate(() => setImmediate(noReply));
          replyTimer = setTimeout(check, options.replyAfterIdleMs ?? DEFAULT_REPLY_AFTER_IDLE_MS);
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
        emit(
          `${error.traceback.length ? error.traceback.join("\n") : `${error.name}: ${error.value}`}\n`,
          "error",
        );
      } else if (isMessageType(msg, "clear_output")) {
        options.onClearOutput?.(msg.content.wait);
      } else if (isMessageType(msg, "execute_input")) {
        result.executionCount = msg.content.execution_count ?? result.executionCount;
      }
    };

    const onStdin = (msg: JupyterMessage) => {
      if (!finished && isMessageType(msg, "input_request"))
        void answerInput(msg.header, msg.content.prompt, msg.content.password);
    };

    const answerInput = async (parent: JupyterMessage["header"], prompt: string, password: boolean) => {
      let value = "";
      if (options.allowStdin && options.onInputRequest) {
        try {
          value = await options.onInputRequest(prompt, password);
        } catch {
          value = "";
        }
      } else if (++inputRequests === 1) {
        result.stdinRequested = true;
        notice({ kind: "stdin-refused", prompt });
      } else {
        value = EOF_REPLY; // asked again: input has ended (see ExecuteOptions.allowStdin)
      }
      if (!finished) host.client.send("stdin", host.client.factory.inputReply(value, parent));
    };

    if (!host.isAlive()) {
      const death = host.death();
      died(death.reason, true, undefined, death.cause);
      return;
    }
    if (signal?.aborted) {
      result.cancelled = true;
      result.status = "aborted";
      finish();
      return;
    }
    unsubscribeDeath = host.onDeath((reason, limit, cause) => died(reason, false, limit, cause));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
      const ms = options.timeoutMs;
      timeLimit = deadlineSignal(ms, () => new TimeoutError(ms, `the execution timed out after ${ms} ms`));
      timeLimit.signal.addEventListener("abort", onTimeLimit, { once: true });
    }
    const request = host.client.factory.executeRequest(code, {
      silent: options.silent,
      storeHistory: options.storeHistory,
      allowStdin: options.stdinDisabled !== true,
      // One request at a time reaches a kernel through nbagent, so there is never a queue worth
      // aborting after an error; with stop_on_error the kernel would instead abort whatever request
      // arrives before its next loop turn (ipykernel's stop_on_error_timeout is 0 s) — under load,
      // the innocent next cell.
      stopOnError: false,
    });
    future = host.client.future("shell", request, {
      onIOPub,
      onStdin,
      onDone: (reply) => {
        if (!finished) done(reply);
      },
    });
    // From here the code may run. A kernel that dies can take its busy/execute_input with it
    // (os._exit before its IOPub thread sent them), so only "not sent" proves it did not run.
    result.codeStarted = true;
  });
}
