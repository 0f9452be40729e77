/**
 * Words for failures: the kernel and runtime layers report them as typed values (KernelStartError
 * with its KernelStartFailure, CallTimeoutError, …) whose messages are for logs; this file turns
 * them into the sentences the model and the user read (without the Error: prefix, which
 * types.ts's errorText adds). Its sibling kernel-text.ts words what happened to a running kernel.
 */
import { KernelStartError, type KernelStartFailure } from "../kernel/errors.js";
import { CallTimeoutError } from "../runtime/deadline.js";

/** Why a kernel could not be started or joined, in words; `output` is the kernel's last output. */
export function startFailureText(f: KernelStartFailure, output?: string): string {
  const said = output ? `; its output:\n${output}` : "";
  return `${startFailureSentence(f)}${said}`;
}

function startFailureSentence(f: KernelStartFailure): string {
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
      return forkServerText(f);
    case "no-port":
      return "could not get a free port";
    default:
      return unworded(f);
  }
}

function forkServerText(f: Extract<KernelStartFailure, { kind: "fork-server" }>): string {
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
    default:
      return unworded(f.what);
  }
}

/** A kind without words is a compile error here (every kind above is a case). */
function unworded(f: never): string {
  return `unexpected failure ${JSON.stringify(f)}`;
}

/** The call's whole deadline passed (the python tool's cells word it per cell: kernel-text.ts). */
export function callTimeoutText(seconds: number): string {
  return `Command timed out after ${seconds} seconds`;
}

/**
 * What a caught failure says, in words: a typed failure worded here, any other Error by its
 * message, anything else as text.
 */
export function describeFailure(err: unknown): string {
  if (err instanceof KernelStartError) return startFailureText(err.failure, err.output);
  if (err instanceof CallTimeoutError) return callTimeoutText(err.seconds);
  return err instanceof Error ? err.message : String(err);
}
