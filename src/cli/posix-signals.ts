/**
 * How a command ends early (docs/cli.md, "Signals and closed output"): SIGINT/SIGTERM abort the work
 * (kernels are interrupted and the result comes back marked cancelled; a second signal exits at
 * once), and a reader that closes stdout (EPIPE) aborts it too, quietly: nobody reads the rest.
 */

import { writeSync } from "node:fs";

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
  // Latched: the stream's own error state is cleared again once it is torn down. Before the stream
  // is made (writeOutput), only a write's EPIPE tells.
  if (watching && (process.stdout.destroyed || process.stdout.errored != null)) outputClosed = true;
  return outputClosed;
}

/**
 * Writes `text` to stdout. Until stdout's stream is made (watchStdout), straight to descriptor 1:
 * node makes process.stdout on first use, and for a pipe that loads its net and stream modules,
 * ~5 ms of a short command's CPU (docs/architecture.md, "How the built command starts"). A pipe
 * that will not take it all now (another process made it non-blocking: EAGAIN) gets the rest
 * through the stream; a closed one (EPIPE) ends the output, as the stream's error would.
 */
export function writeOutput(text: string): void {
  if (outputClosed) return;
  if (watching) {
    process.stdout.write(text);
    return;
  }
  const data = Buffer.from(text, "utf8");
  let at = 0;
  try {
    while (at < data.length) at += writeSync(1, data, at);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EPIPE") {
      outputClosed = true;
      return;
    }
    watchStdout();
    process.stdout.write(data.subarray(at));
  }
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
export async function withInterruptSignal<T>(
  work: (signal: AbortSignal) => Promise<T>,
  /**
   * Watch stdout only once the work has run this long (a command that writes with writeOutput and
   * is usually done sooner: its reader cannot have gone away meanwhile in any way that matters).
   */
  watchOutputAfterMs = 0,
): Promise<T> {
  let watchLater: NodeJS.Timeout | undefined;
  if (watchOutputAfterMs > 0) watchLater = setTimeout(watchStdout, watchOutputAfterMs).unref();
  else watchStdout();
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
    clearTimeout(watchLater);
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
