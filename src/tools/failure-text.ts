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
  type HubServerState,
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

/**
 * A kernelspec the backend does not have, with what it has. `advise`: the caller chose the name, so
 * it is told to pick another (local kernels; a gateway's list says the same by itself). A name the
 * caller cannot choose (the python tool's, set by the host) gets no advice: its caller says who can.
 */
export function noKernelspecText(
  f: Extract<KernelStartFailure, { kind: "no-such-kernelspec" }>,
  advise: boolean,
): string {
  if (f.gateway)
    return `the gateway at ${f.gateway} has no kernelspec "${f.name}" (it has: ${f.available.join(", ") || "none"})`;
  return `no kernelspec named "${f.name}". Available: ${f.available.join(", ")}${advise ? ". Use one of these names." : ""}`;
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
      return noKernelspecText(f, true);
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
          return f.websocket
            ? `the gateway at ${f.gateway} did not open the kernel's WebSocket (${f.request}) within ${f.ms} ms`
            : `the gateway at ${f.gateway} did not answer ${f.request} within ${f.ms} ms`;
        case "connect-timeout":
          return `could not connect to the gateway at ${f.gateway} within ${f.ms} ms`;
        case "network":
          return `could not ${f.websocket ? "open the kernel's WebSocket on" : "reach"} the gateway at ${f.gateway} (${f.request}): ${f.cause}${
            f.code && !f.cause.includes(f.code) ? ` (${f.code})` : ""
          }`;
        default:
          return unworded(f);
      }
    case "refused": {
      const status = `HTTP ${f.status}${f.statusText ? ` ${f.statusText}` : ""}`;
      if (f.hub)
        return hubText(f.hub, `${f.request}${f.websocket ? " (the kernel's WebSocket)" : ""}`, status);
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

/**
 * A JupyterHub answered in place of the user's server (docs/backends.md "JupyterHub"): what the hub
 * says of it, and what to do.
 */
function hubText(h: HubServerState, request: string, status: string): string {
  const server = h.server ? `server "${h.server}" of ${h.user}` : `server of ${h.user}`;
  const root = h.hub.replace(/\/hub$/, "");
  const where = `${root}/user/${h.user}${h.server ? `/${h.server}` : ""}`;
  const answered = `the hub answered ${request} with ${status}`;
  const spawn = `${h.hub}/spawn/${h.user}${h.server ? `/${h.server}` : ""}`;
  const api = h.server
    ? `POST ${h.hub}/api/users/${h.user}/servers/${h.server}`
    : `POST ${h.hub}/api/users/${h.user}/server`;
  switch (h.state) {
    case "not-running":
      return `the JupyterHub user ${server} (${where}) is not running (${answered}). Start it from the hub at ${spawn} (or with the hub's REST API: ${api}), then call again`;
    case "starting":
      return `the JupyterHub user ${server} (${where}) is still starting (${answered}). Call again once the hub shows it running (${spawn})`;
    case "stopping":
      return `the JupyterHub user ${server} (${where}) is stopping (${answered}). Start it again from the hub at ${spawn} once it has stopped, then call again`;
    case "token-refused":
      return `the hub at ${h.hub} refused the token (${answered}): it is not (or no longer) a valid token — revoked, expired, or of another hub. Make a new one at ${h.hub}/token and pass it as NBAGENT_GATEWAY_TOKEN (or --gateway-token-file)`;
    case "unknown":
    case "ready":
      return `the hub at ${h.hub} answered ${request} in place of the user ${server} (${status}), and its API does not say the server is running (the token may not be allowed to read it). Check the server at ${spawn}`;
    default:
      return unworded(h.state);
  }
}

/**
 * A kernel on a JupyterHub user server lost because the hub answered in the server's place
 * (docs/backends.md "JupyterHub"): why, in the words of a death.
 */
export function hubServerGoneText(h: HubServerState): string {
  const server = h.server ? `server "${h.server}" of ${h.user}` : `server of ${h.user}`;
  switch (h.state) {
    case "not-running":
    case "stopping":
      return `the JupyterHub user ${server} was stopped (by the hub's idle culler, an admin or a person), and its kernels with it`;
    case "starting":
      return `the JupyterHub user ${server} was restarted (it is starting again, with new kernels)`;
    case "token-refused":
      // The kernel is not dead: it is out of this token's reach (nbagent's DELETE is refused too).
      return `the hub at ${h.hub} no longer accepts the token (revoked or expired; make a new one at ${h.hub}/token and pass it as NBAGENT_GATEWAY_TOKEN), so nbagent can no longer reach the kernel, which is left running on the user's server until it is stopped there`;
    case "ready":
    case "unknown":
      return `the hub at ${h.hub} answered in place of the user ${server}`;
    default:
      return unworded(h.state);
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
