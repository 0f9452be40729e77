/**
 * How a command ends early (docs/cli.md, "Signals and closed output"): SIGINT/SIGTERM abort the work
 * (kernels are interrupted and the result comes back marked cancelled; a second signal exits at
 * once), and a reader that closes stdout (EPIPE) aborts it too, quietly: nobody reads the rest.
 */

/** Exit status when stdout was closed by its reader: what a shell reports for a SIGPIPE death. */
export const OUTPUT_CLOSED_EXIT = 141;

let watching = false;
let outputClosed = false;
const closedListeners = new Set<() => void>();

/**
 * Whether stdout can no longer be written (its reader went away). A write that hits EPIPE marks the
 * stream errored at once (it is destroyed a tick later), so this is true as soon as that write returns.
 */
export function stdoutClosed(): boolean {
  // Latched: the stream's own error state is cleared again once it is torn down.
  if (process.stdout.destroyed || process.stdout.errored != null) outputClosed = true;
  return outputClosed;
}

/**
 * Takes over stdout's errors (once per process): a closed pipe (EPIPE), or a write after it
 * (ERR_STREAM_DESTROYED), is not a crash with a stack trace but the end of the output.
 */
export function watchStdout(): void {
  if (watching) return;
  watching = true;
  process.stdout.on("error", () => {
    // Any error on stdout means no more output can reach the reader: treat it as closed.
    outputClosed = true;
    for (const listener of [...closedListeners]) listener();
  });
}

/**
 * Runs work with an AbortSignal tied to SIGINT/SIGTERM and to stdout closing: the first signal
 * aborts the work; a second one exits at once (the kernels' watchdogs stop them when we are gone).
 */
export async function withInterruptSignal<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  watchStdout();
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(sig === "SIGINT" ? 130 : 143);
    controller.abort(new InterruptError(sig));
  };
  const onClosed = () => {
    if (!controller.signal.aborted) controller.abort(new OutputClosedError());
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  closedListeners.add(onClosed);
  try {
    return await work(controller.signal);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    closedListeners.delete(onClosed);
  }
}

/** The reason a signal aborts the work with. */
export class InterruptError extends Error {
  /** The command exits after this abort and its kernels go with it (tools/ say the state is lost). */
  readonly hostExiting = true;
  constructor(readonly signal: NodeJS.Signals) {
    super(`received ${signal}`);
  }
}

/** The reason the work is aborted with when stdout's reader went away. */
export class OutputClosedError extends Error {
  readonly hostExiting = true;
  constructor() {
    super("stdout was closed by its reader (EPIPE)");
  }
}

/**
 * The conventional exit status of an aborted work: 130 for SIGINT, 143 for SIGTERM, 141 when
 * stdout was closed.
 */
export function interruptExitCode(signal: AbortSignal): number {
  const reason = signal.reason;
  if (reason instanceof OutputClosedError) return OUTPUT_CLOSED_EXIT;
  return reason instanceof InterruptError && reason.signal === "SIGTERM" ? 143 : 130;
}
