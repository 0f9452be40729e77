/**
 * The gateway backend: kernels on a Jupyter server or Enterprise Gateway, reached over REST and the
 * channels WebSocket, run through the same ConnectedKernel + runExecution as local kernels
 * (docs/backends.md).
 */
import { ConnectedKernel } from "../connected-kernel.js";
import { KernelStartError } from "../errors.js";
import type { KernelBackend, KernelStartOptions } from "../types.js";
import { GATEWAY_FACTS } from "./facts.js";
import {
  type GatewayKernel,
  type GatewayKernelSpec,
  GatewayProvisioner,
  toGatewayKernel,
} from "./provisioner.js";
import { type GatewayOptions, GatewayRest } from "./rest.js";
import { KERNELS, KERNELSPECS, kernelPath } from "./restapi.js";
import type { GatewayWsTransport } from "./ws-transport.js";

// The contract's names, importable from here as well as from ./index.js.
export type { GatewayKernel } from "./provisioner.js";
export { KernelGoneError } from "./provisioner.js";
export type { GatewayOptions } from "./rest.js";
export { GatewayHttpError } from "./rest.js";

export interface GatewayBackendOptions extends GatewayOptions {
  /** "json" forces the legacy JSON framing on the channels socket (default: binary when offered). */
  wsProtocol?: "auto" | "json";
  /** Give up on an unreachable gateway after this long without a connection (default 2 min). */
  reconnectGiveUpMs?: number;
  /** How often a ready kernel's existence is checked on the server (default 5 s; 0: never). */
  pollIntervalMs?: number;
}

export class GatewayBackend implements KernelBackend {
  readonly name = "gateway";
  readonly facts = GATEWAY_FACTS;
  readonly rest: GatewayRest;
  private readonly options: GatewayBackendOptions;
  /** Kernels this backend started or attached to and still holds (dispose() ends the started ones). */
  private readonly kernels = new Map<ConnectedKernel, { owned: boolean }>();
  private readonly provisioners = new WeakMap<ConnectedKernel, GatewayProvisioner>();

  constructor(options: GatewayBackendOptions) {
    this.options = options;
    this.rest = new GatewayRest(options);
  }

  /** The gateway's URL as shown in messages (no token). */
  get url(): string {
    return this.rest.display;
  }

  private spec(o: { kernelName?: string; env?: Record<string, string>; cwd?: string; signal?: AbortSignal }) {
    const spec: GatewayKernelSpec = {
      kernelName: o.kernelName ?? "python3",
      env: o.env,
      cwd: o.cwd,
      signal: o.signal,
      transport: {
        protocol: this.options.wsProtocol,
        giveUpMs: this.options.reconnectGiveUpMs,
        pollIntervalMs: this.options.pollIntervalMs,
      },
    };
    return spec;
  }

  /**
   * The channels connection of one of this backend's kernels (negotiated framing, reconnect count):
   * for tests and diagnostics.
   */
  connection(kernel: ConnectedKernel): GatewayWsTransport | undefined {
    return this.provisioners.get(kernel)?.current?.transport;
  }

  private track(kernel: ConnectedKernel, owned: boolean, provisioner: GatewayProvisioner): ConnectedKernel {
    this.kernels.set(kernel, { owned });
    this.provisioners.set(kernel, provisioner);
    // detach() and shutdown() both call onShutdown: forget the kernel either way.
    return kernel;
  }

  startKernel(o: KernelStartOptions = {}): Promise<ConnectedKernel> {
    return this.open(o, true, (kernel) => kernel.start());
  }

  attachKernel(
    kernelId: string,
    o: { signal?: AbortSignal; startTimeoutMs?: number } = {},
  ): Promise<ConnectedKernel> {
    return this.open({ signal: o.signal, startTimeoutMs: o.startTimeoutMs }, false, (kernel) =>
      kernel.attachTo(kernelId),
    );
  }

  /** A ConnectedKernel over a new provisioner, tracked while `join` starts or attaches it. */
  private async open(
    o: KernelStartOptions,
    owned: boolean,
    join: (kernel: ConnectedKernel) => Promise<void>,
  ): Promise<ConnectedKernel> {
    const provisioner = new GatewayProvisioner(this.rest, this.spec(o));
    const kernel: ConnectedKernel = new ConnectedKernel(provisioner, {
      startTimeoutMs: o.startTimeoutMs ?? this.rest.launchTimeoutMs,
      restartTimeoutMs: this.rest.launchTimeoutMs,
      startStallMs: o.startStallMs,
      signal: o.signal,
      onShutdown: () => this.kernels.delete(kernel),
    });
    this.track(kernel, owned, provisioner);
    try {
      await join(kernel);
    } catch (err) {
      this.kernels.delete(kernel);
      throw err;
    }
    return kernel;
  }

  async listKernels(): Promise<GatewayKernel[]> {
    const r = await this.rest.request("GET", KERNELS);
    return Array.isArray(r.json) ? r.json.map(toGatewayKernel) : [];
  }

  async getKernel(id: string): Promise<GatewayKernel | undefined> {
    const r = await this.rest.request("GET", kernelPath(id), { accept: [404] });
    return r.status === 404 ? undefined : toGatewayKernel(r.json);
  }

  /** Shuts a kernel down on the server (404: already gone, fine). */
  async deleteKernel(id: string): Promise<void> {
    await this.rest.request("DELETE", kernelPath(id), { accept: [404] });
  }

  private async specs(): Promise<{ default?: string; kernelspecs: Record<string, unknown> }> {
    const r = await this.rest.request("GET", KERNELSPECS);
    const j = (r.json ?? {}) as { default?: string; kernelspecs?: Record<string, unknown> };
    return { default: j.default, kernelspecs: j.kernelspecs ?? {} };
  }

  async kernelSpecNames(): Promise<string[]> {
    return Object.keys((await this.specs()).kernelspecs).sort();
  }

  async kernelSpecInfo(name: string): Promise<{ name: string; displayName: string; language: string }> {
    const specs = (await this.specs()).kernelspecs;
    const entry = specs[name] as { spec?: { display_name?: string; language?: string } } | undefined;
    if (!entry)
      throw new KernelStartError({
        kind: "no-such-kernelspec",
        name,
        available: Object.keys(specs).sort(),
        gateway: this.rest.display,
      });
    return {
      name,
      displayName: entry.spec?.display_name ?? name,
      language: entry.spec?.language ?? "",
    };
  }

  /** Shuts down the kernels this backend started and still holds; attached ones are only closed. */
  async dispose(): Promise<void> {
    await Promise.all(
      [...this.kernels].map(([k, { owned }]) => (owned ? k.shutdown() : (k.detach() ?? Promise.resolve()))),
    );
  }
}
