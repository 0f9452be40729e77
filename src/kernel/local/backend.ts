/**
 * The local backend: kernels as child processes spoken to over ZeroMQ (the embedded default).
 */
import { ConnectedKernel } from "../connected-kernel.js";
import type { KernelProvisioner } from "../provisioner.js";
import type { KernelBackend, KernelStartOptions } from "../types.js";
import { resolveKernelSpec } from "./kernelspec.js";
import { type LaunchOptions, LocalKernelProcess } from "./launcher.js";
import type { HeartbeatOptions } from "./zmq-transport.js";

export interface LocalBackendOptions {
  heartbeat?: HeartbeatOptions;
  /** Directory for connection files (default os.tmpdir()). */
  runtimeDir?: string;
  /** Default interrupt grace etc. are per execution; this bounds startups without their own timeout. */
  startTimeoutMs?: number;
  /** Override the kernelspec's interrupt_mode ("message": interrupt_request on the control channel). */
  interruptMode?: "signal" | "message";
}

export class LocalBackend implements KernelBackend {
  readonly name = "local";
  private readonly kernels = new Set<ConnectedKernel>();
  private readonly options: LocalBackendOptions;

  constructor(options: LocalBackendOptions = {}) {
    this.options = options;
  }

  async startKernel(options: KernelStartOptions = {}): Promise<ConnectedKernel> {
    const resolved = await resolveKernelSpec(options.kernelName ?? "python3", options.python);
    const spec = this.options.interruptMode
      ? { ...resolved, interruptMode: this.options.interruptMode }
      : resolved;
    const launchOptions: LaunchOptions = {
      cwd: options.cwd,
      env: options.env,
      heartbeat: this.options.heartbeat,
      runtimeDir: this.options.runtimeDir,
    };
    const provisioner: KernelProvisioner = {
      backend: "local",
      launch: () => LocalKernelProcess.launch(spec, launchOptions),
    };
    const kernel: ConnectedKernel = new ConnectedKernel(provisioner, {
      startTimeoutMs: options.startTimeoutMs ?? this.options.startTimeoutMs ?? 60_000,
      signal: options.signal,
      onShutdown: () => this.kernels.delete(kernel),
    });
    this.kernels.add(kernel); // dispose() during the start waits for it, then stops the kernel
    try {
      await kernel.start();
    } catch (err) {
      this.kernels.delete(kernel);
      throw err;
    }
    return kernel;
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.kernels].map((k) => k.shutdown()));
  }
}

export function createLocalBackend(options: LocalBackendOptions = {}): LocalBackend {
  return new LocalBackend(options);
}
