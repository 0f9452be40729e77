/**
 * One deadline per call (docs/python-tool.md): it covers the queue wait, kernel start, init and every cell.
 * Errors raised when it passes or when the caller aborts are typed (CallTimeoutError's seconds);
 * tools/failure-text.ts words them.
 * A deadline is expressed as an AbortSignal like every other time limit (src/kernel/time-limits.ts):
 * `deadline.signal` fires with its CallTimeoutError; waits compose it with the caller's signal.
 * remainingMs() stays for what takes a number (a kernel start's or an execution's own limit).
 */
import { abortable, deadlineSignal } from "../kernel/time-limits.js";

/** The call's deadline passed; `message` is for logs (tools/failure-text.ts words it). */
export class CallTimeoutError extends Error {
  constructor(readonly seconds: number) {
    super(`call deadline passed: ${seconds} s`);
    this.name = "CallTimeoutError";
  }
}

export class CallAbortedError extends Error {
  /**
   * True when the abort reason says the host process is exiting (it carries `hostExiting: true`, as
   * the CLI's signal reasons do): the kernels go down with it, so their state does not survive.
   */
  readonly hostExiting: boolean;
  constructor(reason?: unknown) {
    // A bare controller.abort() gives a DOMException "AbortError" whose message says nothing more.
    const said = reason instanceof Error && reason.name !== "AbortError";
    super(said ? reason.message : typeof reason === "string" ? reason : "Aborted");
    this.name = "CallAbortedError";
    this.hostExiting =
      typeof reason === "object" &&
      reason !== null &&
      (reason as { hostExiting?: unknown }).hostExiting === true;
  }
}

/** `seconds` may be Infinity: a call without a time limit (a run that goes on, docs/runs.md). */
export class Deadline {
  readonly at: number;
  private timeout?: AbortSignal;

  constructor(
    readonly seconds: number,
    now = Date.now(),
  ) {
    this.at = now + seconds * 1000;
  }

  remainingMs(): number {
    return Math.max(0, this.at - Date.now());
  }

  get expired(): boolean {
    return Date.now() >= this.at;
  }

  error(): CallTimeoutError {
    return new CallTimeoutError(this.seconds);
  }

  /**
   * Fires with this deadline's CallTimeoutError when it passes. Like AbortSignal.timeout its timer
   * does not keep the process alive (a deadline outlives the call it bounds); a wait that nothing
   * else keeps alive uses raceDeadline, whose timer lives as long as the wait.
   */
  get signal(): AbortSignal {
    if (!this.timeout) {
      const controller = new AbortController();
      if (this.expired) controller.abort(this.error());
      else if (Number.isFinite(this.at))
        setTimeout(() => controller.abort(this.error()), this.remainingMs()).unref();
      this.timeout = controller.signal;
    }
    return this.timeout;
  }

  /** Throws when the deadline passed or the signal fired. */
  check(signal?: AbortSignal): void {
    if (signal?.aborted) throw new CallAbortedError(signal.reason);
    if (this.expired) throw this.error();
  }
}

/**
 * Waits for `promise`, but gives up (rejecting with the deadline's CallTimeoutError, or a
 * CallAbortedError for the caller's abort) when the deadline passes or the signal fires first:
 * the two composed into one signal. `onGiveUp` runs when it gives up (e.g. to dequeue).
 */
export async function raceDeadline<T>(
  promise: Promise<T>,
  deadline: Deadline | undefined,
  signal?: AbortSignal,
  onGiveUp?: () => void,
): Promise<T> {
  if (!deadline && !signal) return promise;
  const limit = deadlineSignal(deadline?.remainingMs(), () => deadline!.error(), [signal]);
  try {
    return await abortable(promise, limit.signal, onGiveUp, (reason) =>
      reason instanceof CallTimeoutError ? reason : new CallAbortedError(reason),
    );
  } finally {
    limit.dispose();
  }
}
