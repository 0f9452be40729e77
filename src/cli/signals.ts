/**
 * Runs work with an AbortSignal tied to SIGINT/SIGTERM: the first signal aborts the work (kernels are
 * interrupted and the result comes back marked cancelled); a second one exits at once.
 */
export async function withInterruptSignal<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(sig === "SIGINT" ? 130 : 143);
    controller.abort(new InterruptError(sig));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await work(controller.signal);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The reason a signal aborts the work with. */
export class InterruptError extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`received ${signal}`);
  }
}

/** The conventional exit status of an aborted signal's interrupt: 130 for SIGINT, 143 for SIGTERM. */
export function interruptExitCode(signal: AbortSignal): number {
  const reason = signal.reason;
  return reason instanceof InterruptError && reason.signal === "SIGTERM" ? 143 : 130;
}
