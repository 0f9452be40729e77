/**
 * Why a kernel could not be started or joined, as a typed value: a `kind` with its detail (in the
 * style of NotebookFileError and ArtifactReadError). `message` is for logs; tools/failure-text.ts
 * words every kind, and only tools/ (errorResult, errorText) turns a failure into an Error: text.
 * A gateway's own failures are a GatewayFailure, carried by GatewayUnreachableError and
 * GatewayHttpError (gateway/rest.ts) and KernelGoneError (gateway/provisioner.ts); time limits are
 * TimeoutError (time-limits.ts).
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

/**
 * What a JupyterHub says of a user's server when the hub, not the server, answered a request
 * (gateway/hub.ts): `hub` its URL as shown, `server` the named server ("" the default one).
 */
export interface HubServerState {
  hub: string;
  user: string;
  server: string;
  state: "ready" | "starting" | "stopping" | "not-running" | "token-refused" | "unknown";
}

/**
 * What went wrong between nbagent and a Jupyter server / gateway (docs/backends.md). `gateway` is
 * its URL as shown (no token); `request` what was asked ("POST /api/kernels").
 */
export type GatewayFailure =
  /**
   * No HTTP answer at all: the connection failed (`cause`: the network error's message and code);
   * `websocket`: it was a kernel's WebSocket that could not be opened.
   */
  | {
      kind: "unreachable";
      gateway: string;
      request: string;
      why: "network";
      cause: string;
      code?: string;
      websocket?: boolean;
    }
  /** No answer to the request within `ms`, or no connection within `ms` ("connect-timeout"). */
  | {
      kind: "unreachable";
      gateway: string;
      request: string;
      why: "timeout" | "connect-timeout";
      ms: number;
      websocket?: boolean;
    }
  /** The caller gave up on the request. */
  | { kind: "unreachable"; gateway: string; request: string; why: "cancelled" }
  /**
   * The gateway answered with an HTTP error status; `said`: the server's own message, cut short;
   * `websocket`: it refused a kernel's WebSocket; `firstStatus`: a first attempt failed the same way.
   */
  | {
      kind: "refused";
      gateway: string;
      request: string;
      status: number;
      statusText?: string;
      said?: string;
      websocket?: boolean;
      firstStatus?: number;
      /** A JupyterHub answered in place of the user's server, and what it says of that server. */
      hub?: HubServerState;
    }
  /** The gateway does not know the kernel (any more): found on joining it, or on restarting it. */
  | { kind: "gone"; gateway: string; kernelId: string; seen: "attach" | "restart" };

/** "exited (reason=exit code 3)": the kind and its detail, for logs (tools/failure-text.ts words it). */
export function failureStatement(what: string, f: KernelStartFailure | GatewayFailure): string {
  const { kind, ...detail } = f;
  const parts = Object.entries(detail).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`);
  return `${what}: ${kind}${parts.length ? ` (${parts.join("; ")})` : ""}`;
}

/**
 * An error that carries its failure as a typed value (KernelStartError, the gateway's errors):
 * `message` is a short technical statement for logs; tools/failure-text.ts words `failure`.
 */
export abstract class KernelFailureError extends Error {
  abstract readonly failure: KernelFailure;
}

/**
 * A kernel start (or join) that failed; `failure` says why. `message` is a short technical
 * statement for logs; the words the model and the user read are tools/failure-text.ts's.
 */
export class KernelStartError extends KernelFailureError {
  /** The kernel's last output, when the start failed while its process still ran. */
  output?: string;
  constructor(readonly failure: KernelStartFailure) {
    super(failureStatement("kernel start failed", failure));
    this.name = "KernelStartError";
  }
  get kind(): KernelStartFailure["kind"] {
    return this.failure.kind;
  }
}

/** Any failure of the kernel contract: a start's, or a gateway's. */
export type KernelFailure = KernelStartFailure | GatewayFailure;

const GATEWAY_KINDS: ReadonlySet<string> = new Set<GatewayFailure["kind"]>([
  "unreachable",
  "refused",
  "gone",
]);

export function isGatewayFailure(f: KernelFailure): f is GatewayFailure {
  return GATEWAY_KINDS.has(f.kind);
}

/**
 * A failure that ended a kernel, kept typed for tools/ to word (the kernel layer's `reason` comes
 * first): the restart the reason names failed so, or the gateway stayed unreachable and this was
 * the last failure seen, or the server restarted the kernel while the connection was lost.
 */
export type DeathCause =
  | ({ kind: "restart-failed" } & FailureReport)
  | { kind: "unreachable"; last: GatewayFailure }
  /**
   * The gateway is a JupyterHub user server and the hub answered in its place: the server was
   * stopped (the hub's idle culler, a person, an admin) or is starting again (with new kernels), and
   * its kernels went with it; or the token was revoked, and the kernel, still on the server, is out
   * of reach.
   */
  | { kind: "hub-server"; hub: HubServerState }
  /**
   * After the connection to the kernel was lost and made again, the kernel answered from a new
   * process: it died and its server started it again meanwhile (a Jupyter server restarts a kernel
   * whose process ended, and tells only the sockets connected at that moment). State is gone.
   */
  | { kind: "restarted-while-away" };

/** A caught failure as data: its typed failure, and a kernel's last output when the error had it. */
export interface FailureReport {
  failure: KernelFailure;
  output?: string;
}

/** The failure an error carries, as data; undefined for an error that carries none. */
export function failureReport(err: unknown): FailureReport | undefined {
  if (!(err instanceof KernelFailureError)) return undefined;
  const output = err instanceof KernelStartError ? err.output : undefined;
  return { failure: err.failure, ...(output ? { output } : {}) };
}

/** Why a kernel is dead: in words of the kernel layer, with its typed cause when there is one. */
export interface KernelDeath {
  reason: string;
  cause?: DeathCause;
}

/**
 * Why a kernel is dead after a restart that failed (`what`: which restart): the failure stays a
 * typed value when it is one, for tools/ to word; any other error adds its message to the reason.
 */
export function restartFailedDeath(what: string, err: unknown): KernelDeath {
  const report = failureReport(err);
  return report
    ? { reason: what, cause: { kind: "restart-failed", ...report } }
    : { reason: `${what}: ${(err as Error).message}` };
}
