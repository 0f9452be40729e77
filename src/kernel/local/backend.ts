/**
 * The local backend: kernels as child processes spoken to over ZeroMQ (the embedded default).
 */
import { ConnectedKernel } from "../connected-kernel.js";
import { findInterpreter } from "../interpreter.js";
import type { KernelProvisioner } from "../provisioner.js";
import type { KernelBackend, KernelStartOptions } from "../types.js";
import type { HeartbeatOptions } from "../zmq/transport.js";
import { LOCAL_FACTS } from "./facts.js";
import { ForkServerPool } from "./forkserver.js";
import {
  interpreterOptions,
  type KernelSpec,
  listKernelSpecNames,
  resolveKernelSpec,
  type SpecLookup,
} from "./kernelspec.js";
import { type LaunchOptions, LocalKernelProcess } from "./launcher.js";

export interface LocalBackendOptions {
  heartbeat?: HeartbeatOptions;
  /**
   * The host's environment, captured at the edge (runtime/settings.ts): where the interpreter and
   * kernelspecs are looked for, and the environment of a kernel started without one. Default: none.
   */
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Where the interpreter's choice is remembered (default $TMPDIR/nbagent-<uid>). */
  interpreterCacheDir?: string;
  /** The bubblewrap executable for sandboxed kernels (default: looked for in /usr/bin, /bin). */
  bwrap?: string;
  /** Directory for connection files (default: `kernels` in the per-user state directory). */
  runtimeDir?: string;
  /** Kernels in a PID namespace of their own where possible (default true). */
  pidNamespace?: boolean;
  /** Default interrupt grace etc. are per execution; this bounds startups without their own timeout. */
  startTimeoutMs?: number;
  /** Override the kernelspec's interrupt_mode ("message": interrupt_request on the control channel). */
  interruptMode?: "signal" | "message";
  /**
   * Fork ipykernel kernels from a pre-warmed server (forkserver.ts): the second kernel of a kind
   * (not a retried launch of the first) starts the server, the ones after it (or all, after
   * prewarm()) fork from it, each starting in
   * ~0.2 s instead of ~1.5 s, still a separate ipykernel process. Default on.
   */
  forkServer?: boolean;
}

export class LocalBackend implements KernelBackend {
  readonly name = "local";
  readonly facts = LOCAL_FACTS;
  private readonly kernels = new Set<ConnectedKernel>();
  private readonly options: LocalBackendOptions;
  private readonly forkServers?: ForkServerPool;

  constructor(options: LocalBackendOptions = {}) {
    this.options = options;
    if (options.forkServer ?? true) this.forkServers = new ForkServerPool();
  }

  /** Pids of this backend's fork servers (tests and diagnostics). */
  forkServerPids(): number[] {
    return this.forkServers?.pids() ?? [];
  }

  /** Warms the fork server now for kernels started with these options (when several will follow). */
  async prewarm(options: KernelStartOptions = {}): Promise<void> {
    if (!this.forkServers) return;
    const spec = await resolveKernelSpec(options.kernelName ?? "python3", options.python, this.lookup());
    this.forkServers.prewarm(spec, {
      cwd: options.cwd,
      env: this.kernelEnv(options),
      sandbox: options.sandbox,
    });
  }

  private lookup(): SpecLookup {
    return { env: this.options.hostEnv, interpreterCacheDir: this.options.interpreterCacheDir };
  }

  /** The start options' environment, else the host's (both as given: the caller filters secrets). */
  private kernelEnv(options: KernelStartOptions): Record<string, string> {
    if (options.env) return options.env;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.options.hostEnv ?? {})) if (v !== undefined) env[k] = v;
    return env;
  }

  private async launch(spec: KernelSpec, options: LaunchOptions, retry = false) {
    return (await this.forkServers?.launch(spec, options, retry)) ?? LocalKernelProcess.launch(spec, options);
  }

  async kernelSpecNames(options: { python?: string } = {}): Promise<string[]> {
    const lookup = this.lookup();
    return listKernelSpecNames(
      (await findInterpreter(interpreterOptions(options.python, lookup))).path,
      lookup,
    );
  }

  async kernelSpecInfo(name: string, options: { python?: string } = {}) {
    const spec = await resolveKernelSpec(name, options.python, this.lookup());
    return { name: spec.name, displayName: spec.displayName, language: spec.language };
  }

  async startKernel(options: KernelStartOptions = {}): Promise<ConnectedKernel> {
    const resolved = await resolveKernelSpec(options.kernelName ?? "python3", options.python, this.lookup());
    const spec = {
      ...resolved,
      interruptMode: this.options.interruptMode ?? resolved.interruptMode,
      argv: [
        ...resolved.argv,
        ...historyInMemory(resolved.argv, options.extraArguments),
        ...(options.extraArguments ?? []),
      ],
    };
    const launchOptions: LaunchOptions = {
      cwd: options.cwd,
      env: this.kernelEnv(options),
      heartbeat: this.options.heartbeat,
      runtimeDir: this.options.runtimeDir,
      pidNamespace: this.options.pidNamespace,
      bwrap: this.options.bwrap,
      sandbox: options.sandbox,
      confinement: options.confinement,
      limits: options.limits,
    };
    const provisioner: KernelProvisioner = {
      backend: "local",
      launch: (retry) => this.launch(spec, launchOptions, retry),
    };
    const kernel: ConnectedKernel = new ConnectedKernel(provisioner, {
      startTimeoutMs: options.startTimeoutMs ?? this.options.startTimeoutMs ?? 60_000,
      restartTimeoutMs: this.options.startTimeoutMs ?? 60_000,
      startStallMs: options.startStallMs,
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
    await this.forkServers?.dispose();
  }
}

export function createLocalBackend(options: LocalBackendOptions = {}): LocalBackend {
  return new LocalBackend(options);
}

/**
 * An IPython kernel keeps its input history in memory (as nbclient starts them): kernels started at
 * once with one HOME otherwise share one SQLite file, and IPython writes "ERROR! Session/line number
 * was not unique in database" into a cell's output when two collide. Only for ipykernel's argv, and
 * not when the caller chose a history file.
 */
function historyInMemory(argv: string[], extra: string[] = []): string[] {
  const ipykernel = argv.some(
    (a) => a === "ipykernel_launcher" || a === "ipykernel" || a.endsWith("ipykernel_launcher.py"),
  );
  const chosen = [...argv, ...extra].some((a) => a.startsWith("--HistoryManager.hist_file"));
  return ipykernel && !chosen ? ["--HistoryManager.hist_file=:memory:"] : [];
}
