/**
 * One deadline per call (S14, S30): it covers the queue wait, kernel start, init and every cell.
 * Errors raised when it passes or when the caller aborts carry the texts the model sees.
 */

export class CallTimeoutError extends Error {
  constructor(readonly seconds: number) {
    super(`Command timed out after ${seconds} seconds`);
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

export class Deadline {
  readonly at: number;

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

  /** Throws when the deadline passed or the signal fired. */
  check(signal?: AbortSignal): void {
    if (signal?.aborted) throw new CallAbortedError(signal.reason);
    if (this.expired) throw this.error();
  }
}

/**
 * Waits for `promise`, but gives up (rejecting with the deadline's or the abort's error) when the
 * deadline passes or the signal fires first. `onGiveUp` runs when it gives up (e.g. to dequeue).
 */
export function raceDeadline<T>(
  promise: Promise<T>,
  deadline: Deadline | undefined,
  signal?: AbortSignal,
  onGiveUp?: () => void,
): Promise<T> {
  if (!deadline && !signal) return promise;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const giveUp = (err: Error) =>
      finish(() => {
        onGiveUp?.();
        reject(err);
      });
    const onAbort = () => giveUp(new CallAbortedError(signal?.reason));
    const timer = deadline ? setTimeout(() => giveUp(deadline.error()), deadline.remainingMs()) : undefined;
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => finish(() => resolve(v)),
      (e) => finish(() => reject(e)),
    );
  });
}
