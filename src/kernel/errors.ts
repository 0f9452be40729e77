/**
 * Why a kernel could not be started or joined, as a typed value: a `kind` with its detail (in the
 * style of NotebookFileError and ArtifactReadError). `message` states what happened, without the
 * Error: prefix: only tools/ (errorResult, errorText) turns a failure into an Error: text.
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

function sentence(f: KernelStartFailure): string {
  switch (f.kind) {
    case "exited":
      return `the kernel exited during startup (${f.reason})${f.stderrTail ? `:\n${f.stderrTail}` : ""}`;
    case "ended-in-restart":
      return `the kernel ended during its restart (${f.reason})`;
    case "stalled":
      return `the kernel said nothing within ${f.ms} ms of its start`;
    case "no-such-kernelspec":
      return f.gateway
        ? `the gateway at ${f.gateway} has no kernelspec "${f.name}" (it has: ${f.available.join(", ") || "none"})`
        : `no kernelspec named "${f.name}". Available: ${f.available.join(", ")}. Use one of these names.`;
    case "cancelled":
      return "kernel start was cancelled";
    case "shut-down":
      return "the kernel was shut down; start a new one";
    case "no-cwd":
      return `the kernel's working directory ${f.cwd} does not exist; create it or pass another cwd`;
    case "cannot-attach":
      return `the ${f.backend} backend cannot attach to kernels`;
    case "no-sandbox":
      return `the sandbox was asked for, but ${f.why}`;
    case "no-id":
      return `the gateway at ${f.gateway} created a kernel but sent no id`;
    case "fork-server":
      switch (f.what) {
        case "exited":
          return `the kernel fork server exited (${f.detail})${f.stderrTail ? `:\n${f.stderrTail}` : ""}`;
        case "unsafe":
          return `the kernel fork server is not safe to fork: ${f.detail}`;
        case "fatal":
          return `the kernel fork server could not start:\n${f.detail}`;
        case "refused":
          return `the kernel fork server refused: ${f.detail}`;
        case "not-running":
          return "the kernel fork server is not running";
      }
      break;
    case "no-port":
      return "could not get a free port";
  }
}

/** A kernel start (or join) that failed; `failure` says why, `message` in words (no Error: prefix). */
export class KernelStartError extends Error {
  constructor(readonly failure: KernelStartFailure) {
    super(sentence(failure));
    this.name = "KernelStartError";
  }
  get kind(): KernelStartFailure["kind"] {
    return this.failure.kind;
  }
}
