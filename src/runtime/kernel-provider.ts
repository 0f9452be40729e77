/**
 * Where kernels are made (docs/isolation.md "Where kernels are made"): one KernelProvider per host
 * process, built once from the resolved settings — the backend (local, shared local gateway, remote
 * gateway: kernel-choice.ts), the kernels' environment (env.ts), what of nbagent's state they may see
 * (confinement), the sandbox, the resource limits, and how a failed start is recovered from. Every
 * road to a kernel (the runtime's sessions and named sessions, `nbagent run`) asks it; none builds a
 * backend or a kernel's start options itself. A combination of settings that cannot be honoured is
 * known when the provider is built (`refusal`) and every start refuses with that one text before
 * anything (a backend, the shared gateway, a kernel) starts.
 */

import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type {
  BackendFacts,
  Kernel,
  KernelBackend,
  KernelConfinement,
  KernelLimits,
  KernelSandbox,
  KernelStartOptions,
} from "../kernel/types.js";
import { configureDebugLog } from "../sys/debug-log.js";
import { BACKENDS, backendOf, buildKernelBackend, type KernelsPlace } from "./backends.js";
import { CallAbortedError } from "./deadline.js";
import { buildKernelEnv, type KernelEnv, type SecretFilterOptions, splitSecrets } from "./env.js";
import { SettingsError } from "./errors.js";
import { stopLocalGateway } from "./gateway-deps.js";
import {
  type BuiltBackend,
  type GatewaySetting,
  type KernelChoice,
  planKernelChoice,
} from "./kernel-choice.js";
import type { SandboxMode, Settings } from "./settings.js";
import {
  FD_EXHAUSTION_TEXT,
  isFdExhaustion,
  isGatewayUnreachable,
  logSays,
  logSize,
  watchLog,
} from "./start-failures.js";

export { LIMITS_ON_GATEWAY, SANDBOX_ON_GATEWAY, SANDBOX_ON_SHARED_GATEWAY } from "./backends.js";
export type { SandboxMode } from "./settings.js";
export { isFdExhaustion, isGatewayUnreachable } from "./start-failures.js";

export interface KernelProviderOptions extends SecretFilterOptions {
  /** A remote gateway or "shared" (kernel-choice.ts; default: the settings' gateway). */
  gateway?: GatewaySetting;
  /** A named session was asked for: with no gateway configured, the shared gateway is used. */
  sessionName?: string;
  python?: string;
  /** Default kernelspec name (default "python3"). */
  kernelName?: string;
  /**
   * The settings resolved at the edge (runtime/settings.ts): the gateway, sandbox, limits and
   * interpreter unless the options here say otherwise, and the host environment kernels start from.
   */
  settings: Settings;
  /**
   * The per-user state root (the ArtifactStore's root): hidden from every local kernel; the shared
   * gateway's files live there.
   */
  stateRoot: string;
  /** false/undefined no sandbox, true with network, { network: false } without. Default: the settings'. */
  sandbox?: boolean | SandboxMode;
  /** Resource limits for every kernel (docs/isolation.md). */
  limits?: KernelLimits;
  /** A backend to use instead of building one (tests; an embedding host). Not disposed here. */
  backend?: KernelBackend;
  /** Extra variables for every kernel (not filtered). */
  env?: Record<string, string>;
  /**
   * What local kernels' environment is: "filtered" (default; the host's without its secrets,
   * docs/secrets.md) or "host" (unchanged: `nbagent run` is the user's own run, as with nbclient).
   * Kernels on a gateway always get it filtered.
   */
  localEnvironment?: "filtered" | "host";
  /**
   * Out of file descriptors (docs/python-tool.md): let go of what can be let go of (idle kernels) before the one
   * retry. Called with nothing awaited on the provider.
   */
  releaseIdle?: () => Promise<void>;
}

/** One kernel to start: the caller's part; the provider adds the backend's and the settings'. */
export interface KernelRequest {
  cwd?: string;
  /** Default: the plan's kernelName. */
  kernelName?: string;
  /**
   * The tool session the kernel is for: its entries go into the environment, and its artifacts
   * folder is writable in the sandbox and put back inside the hidden state root. None for `nbagent run`.
   */
  session?: { sessionFile: string; artifactsDir: string };
  extraArguments?: string[];
  signal?: AbortSignal;
  /** Bound on the start; a function is asked again for the retry (the caller's deadline runs on). */
  startTimeoutMs?: number | (() => number);
  /** Before a retry: throws when the caller's deadline passed or it was aborted. */
  check?: () => void;
}

export interface KernelProvider {
  /** What the settings chose (nothing started; bad settings threw when the provider was built). */
  readonly choice: KernelChoice;
  /**
   * What the chosen backend does for its kernels (the given backend's, else the registry's for the
   * choice): the provider and the runtime decide by these, never by the kind.
   */
  readonly facts: BackendFacts;
  /** Where its kernels are (the kernels listing). */
  readonly place: KernelsPlace;
  /** The interpreter kernels are asked to run, when the backend runs the one it is given. */
  readonly python: string | undefined;
  /** The sandbox every local kernel gets, if any. */
  readonly sandbox: SandboxMode | undefined;
  readonly limits: Required<KernelLimits>;
  readonly stateRoot: string;
  /** The settings cannot be honoured together: this text (a SettingsError), and every start throws it. */
  readonly refusal: string | undefined;
  /** The backend, built on first use (a failure is tried again on the next call). Throws the refusal. */
  backend(): Promise<BuiltBackend>;
  /** The backend if it was built (or is being built); never builds it. */
  current(): Promise<BuiltBackend | undefined>;
  /** The environment a kernel for this request gets, and the host variables withheld as secrets. */
  kernelEnv(request?: Pick<KernelRequest, "session">): KernelEnv;
  /** The whole start options for this request (sandbox, confinement, limits, env …). */
  startOptions(request: KernelRequest): KernelStartOptions;
  /** The kernelspec names the backend can start (for its interpreter). */
  kernelSpecNames(): Promise<string[]>;
  /** A kernel for the request, with recovery (see `start`). */
  startKernel(request: KernelRequest): Promise<Kernel>;
  /**
   * Runs `open` (default: the backend's startKernel) with the request's start options; refused
   * settings throw first. Recovery: out of file descriptors (here or on the shared gateway, by its
   * log) → releaseIdle, the shared gateway stopped, one more try; the shared gateway unreachable
   * (another process stopped or replaced it) → found or started again, one more try.
   */
  start<T>(
    request: KernelRequest,
    open?: (backend: BuiltBackend, options: KernelStartOptions) => Promise<T>,
  ): Promise<T>;
  /** Drops the built backend so the next use builds it again; `stop` also stops the shared gateway. */
  forget(stop: boolean): Promise<void>;
  /** Disposes the backend if it was built here. */
  dispose(): Promise<void>;
}

/** The sandbox setting: the option when given, else the settings' (--sandbox, NBAGENT_SANDBOX). */
function sandboxSetting(option: KernelProviderOptions["sandbox"], settings: Settings) {
  if (option === undefined) return settings.sandbox;
  if (option === true) return { network: true };
  return option || undefined;
}

/**
 * The folders nbagent keeps in the state root (connection files, sessions' outputs and artifacts, the
 * shared gateway's token and log, the named-session registries, the view's sockets). Hidden with the
 * root, they change nothing while the root is covered; they matter when a kernel's working directory
 * is the state root itself, which is then put back whole (docs/isolation.md, "nbagent's state
 * hidden"): these stay covered. A new folder in the state root belongs here.
 */
const STATE_FOLDERS = ["kernels", "sessions", "gateway", "named-sessions", "view"];

/** The host's `KERNEL_*` variables: what a kernel on another machine's server is given of them. */
function kernelVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith("KERNEL_")));
}

/** What the kernels can have: the given backend's facts, or those of the choice's kind (backends.ts). */
export function factsFor(choice: KernelChoice, backend: KernelBackend | undefined): BackendFacts {
  return backend?.facts ?? backendOf(choice).facts;
}

export function createKernelProvider(options: KernelProviderOptions): KernelProvider {
  const { settings } = options;
  const hostEnv = settings.env;
  // Every road to a kernel comes here: the debug log (NBAGENT_LOG) is turned on once it is set.
  if (settings.logFile) configureDebugLog(settings.logFile);
  // A bad gateway URL given as an option is an Error: now (the settings were checked at the edge).
  const choice = planKernelChoice({
    gateway: options.gateway,
    python: options.python,
    kernelName: options.kernelName,
    sessionName: options.sessionName,
    settings,
  });
  const sandbox = sandboxSetting(options.sandbox, settings);
  const facts = factsFor(choice, options.backend);
  // The interpreter kernels are asked to run (undefined: the backend finds one, or runs its own).
  const localPython = facts.interpreter && "python" in choice ? choice.python : undefined;
  // Limits: the option's fields, else the settings' (flags, NBAGENT_MAX_PROCESSES /
  // NBAGENT_MEMORY_LIMIT / NBAGENT_CPUS, the defaults). Asked for explicitly where the backend cannot
  // apply them: refused like the sandbox.
  const limits: Required<KernelLimits> = {
    maxProcesses: options.limits?.maxProcesses ?? settings.limits.maxProcesses,
    memoryBytes: options.limits?.memoryBytes ?? settings.limits.memoryBytes,
    cpus: options.limits?.cpus ?? settings.limits.cpus,
  };
  const limitsAsked =
    options.limits?.maxProcesses !== undefined ||
    options.limits?.memoryBytes !== undefined ||
    options.limits?.cpus !== undefined ||
    settings.limitsAsked;
  // A given backend has no words of its own for where its kernels run: a gateway's are used.
  const refusals = options.backend ? BACKENDS.remote.refusals : backendOf(choice).refusals;
  const refusal =
    sandbox && !facts.sandbox ? refusals.sandbox : limitsAsked && !facts.limits ? refusals.limits : undefined;
  const stateRoot = resolve(options.stateRoot);

  const build = async (): Promise<BuiltBackend> => {
    if (options.backend)
      return { choice, backend: options.backend, identity: `backend:${options.backend.name}`, owned: false };
    return buildKernelBackend(choice, { stateRoot, settings, allow: options.allow, deny: options.deny });
  };
  let building: Promise<BuiltBackend> | undefined;
  const backend = (): Promise<BuiltBackend> => {
    if (refusal) return Promise.reject(new SettingsError("conflict", refusal));
    if (!building) {
      const p = build();
      building = p;
      p.catch(() => {
        if (building === p) building = undefined; // the next call tries again
      });
    }
    return building;
  };
  const current = async () => building?.catch(() => undefined);
  const forget = async (stop: boolean): Promise<void> => {
    const old = building;
    building = undefined;
    const r = await old?.catch(() => undefined);
    // The gateway first: one out of descriptors cannot accept the shutdown requests dispose makes,
    // each of which would wait out its timeout; stopped, it refuses them at once.
    if (stop && r?.shared) await stopLocalGateway({ python: r.shared.python, stateRoot }).catch(() => false);
    if (r?.owned) await r.backend.dispose().catch(() => {});
  };

  // What of the host's environment kernels are given: all of it (less secrets) where they run with
  // this machine's environment; on another machine's server only the KERNEL_* variables (BackendFacts).
  const givenEnv = facts.hostEnvironment ? hostEnv : kernelVariables(hostEnv);
  const kernelEnv = (request: Pick<KernelRequest, "session"> = {}): KernelEnv => {
    const session = request.session;
    if (options.localEnvironment === "host" && !facts.remote)
      return { env: { ...(hostEnv as Record<string, string>), ...options.env }, withheld: [] };
    if (!session) {
      const host = splitSecrets(givenEnv, options);
      const env = { ...host.env, ...options.env };
      return { env, withheld: host.withheld.filter((name) => !(name in env)) };
    }
    return buildKernelEnv({
      hostEnv: givenEnv,
      allow: options.allow,
      deny: options.deny,
      extra: options.env,
      sessionFile: session.sessionFile,
      artifactsDir: session.artifactsDir,
    });
  };

  const startOptions = (request: KernelRequest): KernelStartOptions => {
    const artifactsDir = request.session && resolve(request.session.artifactsDir);
    // Bound or put back, it must exist.
    if ((facts.sandbox || facts.confinement) && artifactsDir)
      mkdirSync(artifactsDir, { recursive: true, mode: 0o700 });
    const sandboxed: KernelSandbox | undefined =
      facts.sandbox && sandbox
        ? { writable: artifactsDir ? [artifactsDir] : [], network: sandbox.network }
        : undefined;
    const confinement: KernelConfinement | undefined = facts.confinement
      ? {
          hide: [stateRoot, ...STATE_FOLDERS.map((f) => join(stateRoot, f))],
          expose: artifactsDir ? [artifactsDir] : [],
        }
      : undefined;
    const timeout = request.startTimeoutMs;
    return {
      kernelName: request.kernelName ?? choice.kernelName,
      python: localPython,
      cwd: request.cwd,
      env: kernelEnv(request).env,
      signal: request.signal,
      startTimeoutMs: typeof timeout === "function" ? timeout() : timeout,
      ...(request.extraArguments ? { extraArguments: request.extraArguments } : {}),
      ...(sandboxed ? { sandbox: sandboxed } : {}),
      ...(confinement ? { confinement } : {}),
      ...(facts.limits ? { limits } : {}),
    };
  };

  async function start<T>(
    request: KernelRequest,
    open?: (backend: BuiltBackend, options: KernelStartOptions) => Promise<T>,
  ): Promise<T> {
    const before = await current();
    const logFrom = logSize(before?.shared?.logFile);
    // Set when the shared gateway's log reports it out of descriptors during an attempt: stopping it
    // ends the requests it can no longer accept (each would otherwise wait out its own timeout).
    let stopping: Promise<void> | undefined;
    const attempt = async (): Promise<T> => {
      if (request.signal?.aborted) throw new CallAbortedError(request.signal.reason);
      const b = await backend();
      // Out of descriptors, the shared gateway may stall a start (an unanswered WebSocket) rather
      // than fail it: its log is watched while the kernel starts.
      const watch = b.shared
        ? watchLog(b.shared.logFile, b === before ? logFrom : logSize(b.shared.logFile), FD_EXHAUSTION_TEXT)
        : undefined;
      watch?.signal.addEventListener("abort", () => {
        stopping ??= forget(true);
      });
      const signal =
        watch && request.signal
          ? AbortSignal.any([request.signal, watch.signal])
          : (watch?.signal ?? request.signal);
      try {
        const o = startOptions({ ...request, signal });
        const started = await (open ? open(b, o) : (b.backend.startKernel(o) as Promise<T>));
        // Started, but the gateway is being stopped: the kernel goes with it (disposed with the backend).
        if (watch?.signal.aborted) throw watch.signal.reason;
        return started;
      } finally {
        watch?.stop();
      }
    };
    try {
      return await attempt();
    } catch (err) {
      if (refusal) throw err;
      request.check?.();
      const r = await current();
      const shared = r?.shared !== undefined;
      // The shared gateway may run out of descriptors anywhere (creating the kernel, opening its
      // channels); its own log says so even when the error we got does not.
      const gatewayOutOfFds =
        stopping !== undefined ||
        (shared && r === before && logSays(r?.shared?.logFile, logFrom, FD_EXHAUSTION_TEXT));
      if (isFdExhaustion(err) || gatewayOutOfFds) {
        // Out of descriptors: on the shared gateway, stop the gateway (its process is out of
        // descriptors, and stopping it ends its kernels), then let go of every idle kernel; the
        // retry starts a new gateway on demand.
        if (stopping) await stopping;
        else if (shared) await forget(true);
        await options.releaseIdle?.();
        return attempt();
      }
      if (shared && isGatewayUnreachable(err)) {
        // Another process stopped or replaced the shared gateway: find (or start) the current one.
        await forget(false);
        return attempt();
      }
      throw err;
    }
  }

  return {
    choice,
    facts,
    place: backendOf(choice).place(choice),
    python: localPython,
    sandbox,
    limits,
    stateRoot,
    refusal,
    backend,
    current,
    kernelEnv,
    startOptions,
    async kernelSpecNames() {
      const { backend: b } = await backend();
      return b.kernelSpecNames({ python: localPython });
    },
    startKernel: (request) => start<Kernel>(request),
    start,
    forget,
    async dispose() {
      const r = await current();
      if (r?.owned) await r.backend.dispose();
    },
  };
}
