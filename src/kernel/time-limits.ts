/**
 * Deadlines as AbortSignals: the one way the kernel and runtime layers express "give up after N ms"
 * or "the caller gave up". A deadline is a signal whose `reason` is a typed error (TimeoutError here,
 * CallTimeoutError for a call's deadline in runtime/), composed with the caller's signal by
 * anySignal(); whatever waits takes a signal and rejects with its reason (abortable()).
 */

/** A kernel-layer time limit ran out (a request's reply, a kernel's first answer, an execution). */
export class TimeoutError extends Error {
  constructor(
    readonly ms: number,
    message = `timed out after ${ms} ms`,
  ) {
    super(message);
    this.name = "TimeoutError";
  }
}

/** A signal that fires when any of `signals` does, with that one's reason (AbortSignal.any where present). */
export function anySignal(signals: readonly (AbortSignal | undefined)[]): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 1) return present[0];
  const native = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (native) return native.call(AbortSignal, present);
  // Node < 20.3 has no AbortSignal.any.
  const controller = new AbortController();
  const fired = present.find((s) => s.aborted);
  if (fired) {
    controller.abort(fired.reason);
    return controller.signal;
  }
  const onAbort = (event: Event) => {
    for (const s of present) s.removeEventListener("abort", onAbort);
    controller.abort((event.target as AbortSignal).reason);
  };
  for (const s of present) s.addEventListener("abort", onAbort, { once: true });
  return controller.signal;
}

/** A deadline that ends with its scope: `dispose()` stops its timer (nothing stays scheduled). */
export interface ScopedDeadline {
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * A signal that aborts with `reason()` after `ms` (or with the reason of any of `also`, first wins).
 * Its timer keeps the process alive while it runs (a wait on it is real work, unlike
 * AbortSignal.timeout's unref'd timer), so the owner disposes it when the wait is over.
 * `ms` of Infinity (or undefined) means no time limit: only `also` can fire it.
 */
export function deadlineSignal(
  ms: number | undefined,
  reason: () => unknown,
  also: readonly (AbortSignal | undefined)[] = [],
): ScopedDeadline {
  if (ms === undefined || !Number.isFinite(ms)) {
    const signal = anySignal(also.length ? also : [new AbortController().signal]);
    return { signal, dispose: () => {} };
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(reason()), Math.max(0, Math.min(ms, 2 ** 31 - 1)));
  return {
    signal: anySignal([controller.signal, ...also]),
    dispose: () => clearTimeout(timer),
  };
}

/**
 * Settles as `promise` does, or rejects with the signal's reason (through `toError` when given) when
 * it fires first; then `onAbort` runs, e.g. to leave a queue. No signal: `promise` itself.
 */
export function abortable<T>(
  promise: Promise<T>,
  signal?: AbortSignal,
  onAbort?: () => void,
  toError: (reason: unknown) => unknown = (reason) => reason,
): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", giveUp);
      fn();
    };
    function giveUp() {
      finish(() => {
        onAbort?.();
        reject(toError(signal!.reason));
      });
    }
    if (signal.aborted) return giveUp();
    signal.addEventListener("abort", giveUp, { once: true });
    promise.then(
      (v) => finish(() => resolve(v)),
      (e) => finish(() => reject(e)),
    );
  });
}
