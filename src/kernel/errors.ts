/**
 * Why a kernel could not be started or joined, as a typed value: a `kind` with its detail (in the
 * style of NotebookFileError and ArtifactReadError). `message` is for logs; tools/failure-text.ts
 * words every kind, and only tools/ (errorResult, errorText) turns a failure into an Error: text.
 * The gateway's own failures are GatewayHttpError / GatewayUnreachableError (gateway/rest.ts) and
 * KernelGoneError (gateway/provisioner.ts); time limits are TimeoutError (signals.ts).
 */

export type KernelStartFailure =
  /** The kernel process ended before it answered; `reason` is "exit code N" or "signal S". */
  | { kind: "exited"; reason: string; stderrTail?: string }
  /** A kernel restarted in place (same id) ended before it answered again. */
  | { kind: "ended-in-restart"; reason: string }
  /** The kernel said nothing at all within `ms` of its start (it may be started again). */
  | { kind: "stalled"; ms: number }
  /** No kernelspec of that name; `gateway` names the server when it was a gateway's list. */
  | { kind: "no-such-kernelspec"; name: string; available: string[]; gateway?: string }
  /** The caller gave up on the start. */
  | { kind: "cancelled" }
  /** The kernel was shut down; a restart cannot bring it back. */
  | { kind: "shut-down" }
  /** The working directory asked for does not exist (local kernels). */
  | { kind: "no-cwd"; cwd: string }
  /** This backend cannot join kernels that another process started. */
  | { kind: "cannot-attach"; backend: string }
  /** The sandbox was asked for and cannot be made here (`why` says what is missing). */
  | { kind: "no-sandbox"; why: string }
  /** The gateway created a kernel but its answer had no id. */
  | { kind: "no-id"; gateway: string }
  /** The local kernel fork server failed: it exited, refused, could not start, or is not running. */
  | {
      kind: "fork-server";
      what: "exited" | "unsafe" | "fatal" | "refused" | "not-running";
      detail?: string;
      stderrTail?: string;
    }
  /** No free TCP port for the kernel's connection file. */
  | { kind: "no-port" };

/** "exited (reason=exit code 3)": the kind and its detail, for logs (tools/failure-text.ts words it). */
function statement(f: KernelStartFailure): string {
  const { kind, ...detail } = f;
  const parts = Object.entries(detail).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`);
  return `kernel start failed: ${kind}${parts.length ? ` (${parts.join("; ")})` : ""}`;
}

/**
 * A kernel start (or join) that failed; `failure` says why. `message` is a short technical
 * statement for logs; the words the model and the user read are tools/failure-text.ts's.
 */
export class KernelStartError extends Error {
  /** The kernel's last output, when the start failed while its process still ran. */
  output?: string;
  constructor(readonly failure: KernelStartFailure) {
    super(statement(failure));
    this.name = "KernelStartError";
  }
  get kind(): KernelStartFailure["kind"] {
    return this.failure.kind;
  }
}

/**
 * Why a kernel is dead after a restart that failed (`what`: which restart): the failure stays a
 * typed value when it is one, for tools/ to word; any other error adds its message to the reason.
 */
export function restartFailedDeath(what: string, err: unknown): KernelDeath {
  return err instanceof KernelStartError
    ? { reason: what, failure: err.failure }
    : { reason: `${what}: ${(err as Error).message}` };
}

/** Why a kernel is dead: in words of the kernel layer, with the failure of its restart if that was it. */
export interface KernelDeath {
  reason: string;
  failure?: KernelStartFailure;
}
