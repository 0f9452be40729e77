/**
 * Kernels on a Jupyter server or gateway: created with POST /api/kernels (retried once on an HTTP
 * 5xx), joined by id, interrupted/restarted/stopped over REST; messages travel on the channels
 * WebSocket (ws-transport.ts). Everything else is the shared ConnectedKernel (docs/backends.md).
 */
import { failureStatement, type GatewayFailure, KernelFailureError, KernelStartError } from "../errors.js";
import type { KernelProvisioner, LaunchedKernel } from "../provisioner.js";
import { GatewayHttpError, type GatewayRest } from "./rest.js";
import { KERNELS, KERNELSPECS, kernelActionPath, kernelPath } from "./restapi.js";
import { GatewayWsTransport, type WsTransportOptions } from "./ws-transport.js";

/** How long a started kernel may take to settle (LaunchedKernel.settle) before the start goes on anyway. */
const SETTLE_MS = 3000;

/** The server says this kernel does not exist (any more). `message` is for logs. */
export class KernelGoneError extends KernelFailureError {
  readonly kernelId: string;
  constructor(readonly failure: Extract<GatewayFailure, { kind: "gone" }>) {
    super(failureStatement("gateway kernel gone", failure));
    this.name = "KernelGoneError";
    this.kernelId = failure.kernelId;
  }
}

export interface GatewayKernelSpec {
  kernelName: string;
  env?: Record<string, string>;
  /** The kernel's working directory (sent as `path`; the runtime's init script also changes to it). */
  cwd?: string;
  signal?: AbortSignal;
  transport?: Pick<WsTransportOptions, "protocol" | "giveUpMs" | "maxBackoffMs" | "pollIntervalMs">;
}

/** What the server tells about one of its kernels (GET /api/kernels). */
export interface GatewayKernel {
  id: string;
  name: string;
  lastActivity: Date | undefined;
  executionState: string;
  connections: number;
}

export function toGatewayKernel(raw: unknown): GatewayKernel {
  const r = (raw ?? {}) as Record<string, unknown>;
  const last = typeof r.last_activity === "string" ? new Date(r.last_activity) : undefined;
  return {
    id: String(r.id ?? ""),
    name: String(r.name ?? ""),
    lastActivity: last && !Number.isNaN(last.getTime()) ? last : undefined,
    executionState: String(r.execution_state ?? "unknown"),
    connections: typeof r.connections === "number" ? r.connections : 0,
  };
}

export class GatewayProvisioner implements KernelProvisioner {
  readonly backend = "gateway" as const;
  private readonly rest: GatewayRest;
  private readonly spec: GatewayKernelSpec;
  /** The kernel most recently launched or attached by this provisioner. */
  current?: GatewayLaunchedKernel;

  constructor(rest: GatewayRest, spec: GatewayKernelSpec) {
    this.rest = rest;
    this.spec = spec;
  }

  async launch(): Promise<LaunchedKernel> {
    const body: Record<string, unknown> = { name: this.spec.kernelName };
    if (this.spec.env) body.env = this.spec.env;
    if (this.spec.cwd) body.path = this.spec.cwd;
    const model = toGatewayKernel(await this.create(body));
    if (!model.id) throw new KernelStartError({ kind: "no-id", gateway: this.rest.display });
    try {
      return await this.connect(model.id);
    } catch (err) {
      // Ours and unusable: do not leave it running on the server.
      await this.rest.request("DELETE", kernelPath(model.id), { accept: [404] }).catch(() => {});
      throw err;
    }
  }

  /** POST /api/kernels; one more try after an HTTP 5xx (a gateway busy or restarting; docs/backends.md). */
  private async create(body: Record<string, unknown>): Promise<unknown> {
    const post = () =>
      this.rest.request("POST", KERNELS, {
        body,
        signal: this.spec.signal,
        timeoutMs: this.rest.launchTimeoutMs,
      });
    try {
      return (await post()).json;
    } catch (err) {
      if (!(err instanceof GatewayHttpError)) throw err;
      // A JupyterHub user server that is starting: wait for it (the hub's progress stream), then once more.
      if (
        err.failure.hub?.state === "starting" &&
        (await this.rest.waitForHubServer(this.rest.launchTimeoutMs, this.spec.signal))
      )
        return (await post()).json;
      // jupyter_server answers an unknown kernel name with a bare 500 "Unhandled error": say what it was.
      await this.throwIfNoSuchSpec();
      if (err.status < 500) throw err;
      try {
        return (await post()).json;
      } catch (again) {
        throw again instanceof GatewayHttpError ? again.triedTwice(err.status) : again;
      }
    }
  }

  /** After a failed create: the server has no kernelspec of that name → an error that says so. */
  private async throwIfNoSuchSpec(): Promise<void> {
    const specs = await this.rest
      .request("GET", KERNELSPECS, { signal: this.spec.signal })
      .then((r) => (r.json as { kernelspecs?: Record<string, unknown> } | undefined)?.kernelspecs)
      .catch(() => undefined);
    if (!specs || this.spec.kernelName in specs) return;
    throw new KernelStartError({
      kind: "no-such-kernelspec",
      name: this.spec.kernelName,
      available: Object.keys(specs).sort(),
      gateway: this.rest.display,
    });
  }

  async attach(kernelId: string): Promise<LaunchedKernel> {
    const r = await this.rest.request("GET", kernelPath(kernelId), {
      accept: [404],
      signal: this.spec.signal,
    });
    if (r.status === 404)
      throw new KernelGoneError({ kind: "gone", gateway: this.rest.display, kernelId, seen: "attach" });
    return this.connect(kernelId, toGatewayKernel(r.json).executionState);
  }

  private async connect(kernelId: string, serverState?: string): Promise<LaunchedKernel> {
    const kernel = new GatewayLaunchedKernel(this.rest, kernelId, serverState);
    const transport = await GatewayWsTransport.connect(
      this.rest,
      kernelId,
      {
        ...this.spec.transport,
        onGone: (reason) => kernel.markGone(reason),
        onShutdownRequest: () => void kernel.kill(1),
        onServerStatus: (state) => kernel.serverStatus(state),
      },
      this.spec.signal,
    );
    kernel.transport = transport;
    this.current = kernel;
    return kernel;
  }
}

export class GatewayLaunchedKernel implements LaunchedKernel {
  transport!: GatewayWsTransport;
  readonly kernelId: string;
  readonly exited: Promise<string>;
  private readonly rest: GatewayRest;
  private gone = false;
  private resolveExit!: (reason: string) => void;
  private deleting?: Promise<void>;

  constructor(
    rest: GatewayRest,
    kernelId: string,
    readonly serverState?: string,
  ) {
    this.rest = rest;
    this.kernelId = kernelId;
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
  }

  private path(action?: "interrupt" | "restart"): string {
    return action ? kernelActionPath(this.kernelId, action) : kernelPath(this.kernelId);
  }

  /**
   * The server said it is restarting the kernel itself (its process ended). A restart asked now
   * waits for that one instead of racing it: jupyter_server 1.23 answers a REST restart during its
   * own with HTTP 500, and the collision can leave its auto-restarter stopped, so the kernel's
   * next death goes unnoticed by everyone.
   */
  private serverRestarting = false;

  serverStatus(state: string): void {
    if (state === "restarting") this.serverRestarting = true;
  }

  markGone(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    this.resolveExit(reason);
  }

  isRunning(): boolean {
    return !this.gone;
  }

  async interrupt(): Promise<void> {
    const r = await this.rest.request("POST", this.path("interrupt"), { accept: [404] });
    if (r.status === 404) this.markGone(this.goneReason());
  }

  async restart(): Promise<void> {
    if (this.serverRestarting) {
      this.serverRestarting = false;
      // The caller waits for kernel_info afterwards: the restarted process answers it, once our
      // socket's server-side streams lead to its (possibly new) ports.
      await this.whileStarting(this.rest.launchTimeoutMs);
      await this.transport.renewConnection();
      return;
    }
    const post = () =>
      this.rest.request("POST", this.path("restart"), {
        accept: [404],
        timeoutMs: this.rest.launchTimeoutMs,
      });
    let r: Awaited<ReturnType<typeof post>>;
    try {
      r = await post();
    } catch (err) {
      // jupyter_server answers 500 while its own automatic restart (after the kernel died) is still
      // under way: wait until that one is over, then ask once more.
      if (!(err instanceof GatewayHttpError) || err.status < 500) throw err;
      await this.whileStarting(this.rest.launchTimeoutMs);
      r = await post();
    }
    if (r.status === 404) {
      this.markGone(this.goneReason());
      throw new KernelGoneError({
        kind: "gone",
        gateway: this.rest.display,
        kernelId: this.kernelId,
        seen: "restart",
      });
    }
  }

  async settle(ping: () => Promise<void>, signal: AbortSignal): Promise<void> {
    // Usually one GET: the server's listener joined while the kernel booted. It misses statuses
    // only when the kernel answered within its reconnect interval (~100 ms) of binding.
    try {
      await this.whileStarting(SETTLE_MS, ping, signal);
    } catch {
      // not worth failing a start over: the kernel itself answered
    }
  }

  /**
   * Asks GET /api/kernels/{id} until the server no longer reports the kernel starting or
   * restarting (or no longer has it), for at most `withinMs`; `ping` runs before each pause.
   */
  private async whileStarting(
    withinMs: number,
    ping?: () => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void> {
    const deadline = Date.now() + withinMs;
    for (let pause = 50; Date.now() < deadline && !signal?.aborted; pause = Math.min(pause * 2, 1000)) {
      const r = await this.rest.request("GET", this.path(), { accept: [404], signal });
      const state = (r.json as { execution_state?: string } | undefined)?.execution_state;
      if (r.status === 404 || (state !== "starting" && state !== "restarting")) return;
      await ping?.();
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  private goneReason(): string {
    return `the gateway at ${this.rest.display} says kernel ${this.kernelId} no longer exists`;
  }

  /** DELETE /api/kernels/{id} (404: already gone, fine). The server stops the process itself. */
  kill(_graceMs: number): Promise<void> {
    if (this.gone) return Promise.resolve();
    this.deleting ??= this.rest.request("DELETE", this.path(), { accept: [404] }).then(
      () => this.markGone("shut down through the gateway"),
      (err: Error) => this.markGone(`shutdown asked, but the gateway did not confirm: ${err.message}`),
    );
    return this.deleting;
  }

  async cleanup(): Promise<void> {}

  retryable(): boolean {
    return false;
  }
}
