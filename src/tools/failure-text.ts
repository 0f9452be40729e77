/**
 * Words for failures: the kernel and runtime layers report them as typed values (KernelStartError
 * with its KernelStartFailure, the gateway's errors with their GatewayFailure, CallTimeoutError, …)
 * whose messages are for logs; this file turns
 * them into the sentences the model and the user read (without the Error: prefix, which
 * types.ts's errorText adds). Its sibling kernel-text.ts words what happened to a running kernel.
 */
import {
  failureReport,
  type GatewayFailure,
  isGatewayFailure,
  type KernelFailure,
  type KernelStartFailure,
} from "../kernel/errors.js";
import { CallTimeoutError } from "../runtime/deadline.js";
import { SlotWaitTimeoutError } from "../runtime/errors.js";

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

/** Any failure of the kernel contract in words: a start's, or a gateway's. */
export function failureWords(f: KernelFailure, output?: string): string {
  return isGatewayFailure(f) ? gatewayFailureText(f) : startFailureText(f, output);
}

/** What went wrong with a gateway, in words that name it by URL (never its token). */
export function gatewayFailureText(f: GatewayFailure): string {
  switch (f.kind) {
    case "unreachable":
      switch (f.why) {
        case "cancelled":
          return `${f.request} to the gateway at ${f.gateway} was cancelled`;
        case "timeout":
          return `the gateway at ${f.gateway} did not answer ${f.request} within ${f.ms} ms`;
        case "connect-timeout":
          return `could not connect to the gateway at ${f.gateway} within ${f.ms} ms`;
        case "network":
          return `could not reach the gateway at ${f.gateway} (${f.request}): ${f.cause}${
            f.code && !f.cause.includes(f.code) ? ` (${f.code})` : ""
          }`;
        default:
          return unworded(f);
      }
    case "refused": {
      const status = `HTTP ${f.status}${f.statusText ? ` ${f.statusText}` : ""}`;
      if (f.websocket)
        return `the gateway at ${f.gateway} refused the kernel's WebSocket (${f.request}): ${status}`;
      const auth = f.status === 401 || f.status === 403 ? " (the token was missing or refused)" : "";
      const tried =
        f.firstStatus !== undefined ? ` (tried twice: the first attempt got HTTP ${f.firstStatus} too)` : "";
      return `the gateway at ${f.gateway} answered ${f.request} with ${status}${auth}${f.said ? `: ${f.said}` : ""}${tried}`;
    }
    case "gone":
      return f.seen === "attach"
        ? `the gateway at ${f.gateway} has no kernel ${f.kernelId} (it was shut down or culled)`
        : `the gateway at ${f.gateway} says kernel ${f.kernelId} no longer exists`;
    default:
      return unworded(f);
  }
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
  const report = failureReport(err);
  if (report) return failureWords(report.failure, report.output);
  if (err instanceof SlotWaitTimeoutError)
    return `${callTimeoutText(err.seconds)} while waiting for a free kernel slot (all ${err.maxSessions} busy)`;
  if (err instanceof CallTimeoutError) return callTimeoutText(err.seconds);
  return err instanceof Error ? err.message : String(err);
}
