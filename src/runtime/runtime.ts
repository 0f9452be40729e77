/**
 * The runtime: one per host process (the CLI, an MCP server, a pi extension). It owns the kernel
 * backend, the kept kernel sessions and the artifact store, and is shared by the python tool and
 * (later) the notebook tool. `dispose()` shuts every kernel down.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createLocalBackend } from "../kernel/index.js";
import type { Kernel, KernelBackend, KernelSandbox } from "../kernel/types.js";
import { ArtifactStore, DEFAULT_ARTIFACT_MAX_AGE_MS } from "../output/artifacts.js";
import { CallAbortedError, type Deadline } from "./deadline.js";
import { buildKernelEnv, type KernelEnv, type SecretFilterOptions } from "./env.js";
import type { SessionSpec } from "./session.js";
import {
  KernelSessions,
  type KernelSessionsOptions,
  type SessionCallOptions,
  type SessionLease,
} from "./sessions.js";

export interface RuntimeOptions extends KernelSessionsOptions, SecretFilterOptions {
  /** Kernel backend (default: the local ZeroMQ backend, created on first use). */
  backend?: KernelBackend;
  /** Interpreter for python kernels (default: findInterpreter()'s choice, made by the backend). */
  python?: string;
  /** Default kernelspec name (default "python3"). */
  kernelName?: string;
  /** Session id used when a call names none (default "default"). */
  sessionId?: string;
  /** Per-user state root for session dirs and artifacts (default $TMPDIR/nbagent-<uid>). */
  stateRoot?: string;
  /** The host's session state file, exported as PI_SESSION_FILE (default <session dir>/session.json). */
  sessionFile?: string;
  /**
   * Host environment to start kernels from (default process.env); secrets are filtered out
   * (docs/secrets.md), except names matching `allow` or its NBAGENT_ALLOW_ENV.
   */
  hostEnv?: NodeJS.ProcessEnv;
  /** Extra variables for every kernel (not filtered). */
  env?: Record<string, string>;
  /** Bound on one kernel start, within the call's deadline (default 60 s). */
  startTimeoutMs?: number;
  /**
   * Artifacts older than this are deleted when the runtime is created (default 7 days, or
   * NBAGENT_ARTIFACT_DAYS; 0 keeps them all).
   */
  artifactMaxAgeMs?: number;
  /**
   * Run kernels in the sandbox (docs/isolation.md): false/undefined no, true with network,
   * { network: false } without. Default: NBAGENT_SANDBOX of hostEnv (see sandboxFromEnv).
   */
  sandbox?: boolean | { network: boolean };
}

/**
 * NBAGENT_SANDBOX: unset, "", "0", "off" → no sandbox; "1", "on" → sandbox with network;
 * "net-off" → sandbox without network. Anything else is an Error: (nothing starts).
 */
export function sandboxFromEnv(env: NodeJS.ProcessEnv): { network: boolean } | undefined {
  const v = env.NBAGENT_SANDBOX?.trim().toLowerCase() ?? "";
  if (v === "" || v === "0" || v === "off") return undefined;
  if (v === "1" || v === "on") return { network: true };
  if (v === "net-off") return { network: false };
  throw new Error(`Error: NBAGENT_SANDBOX=${env.NBAGENT_SANDBOX} is not one of 0, 1, net-off`);
}

export interface Runtime {
  readonly sessions: KernelSessions;
  readonly artifacts: ArtifactStore;
  /** How many old artifacts the creation-time prune removed (it runs in the background). */
  readonly artifactsPruned: Promise<number>;
  readonly defaultSessionId: string;
  /** The kernelspec names this runtime's backend can start (for its interpreter). */
  kernelSpecNames(): Promise<string[]>;
  /**
   * The kernelspec a new notebook records for the kernel it will run in: `name` (default: the
   * runtime's kernelName, else python3) with its display name and language; undefined when the
   * backend cannot tell.
   */
  kernelSpecInfo(
    name?: string,
  ): Promise<{ name: string; display_name: string; language: string } | undefined>;
  /** The environment a kernel for this session gets (secrets filtered, session entries added). */
  kernelEnv(spec: SessionSpec): Record<string, string>;
  /** The same, with the names of the host variables withheld as secrets. */
  kernelEnvWithWithheld(spec: SessionSpec): KernelEnv;
  withSession<T>(
    spec: SessionSpec,
    options: SessionCallOptions,
    fn: (lease: SessionLease) => Promise<T>,
  ): Promise<T>;
  dispose(): Promise<void>;
}

/** EMFILE / ENFILE / "Too many open files" (S22). */
export function isFdExhaustion(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return (
    e?.code === "EMFILE" ||
    e?.code === "ENFILE" ||
    /too many open files|EMFILE|ENFILE/i.test(e?.message ?? "")
  );
}

/** NBAGENT_ARTIFACT_DAYS (a number of days; 0 keeps every artifact), else the default. */
export function artifactMaxAgeFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env.NBAGENT_ARTIFACT_DAYS?.trim();
  const days = Number(text);
  return text && Number.isFinite(days) && days >= 0 ? days * 24 * 3600 * 1000 : DEFAULT_ARTIFACT_MAX_AGE_MS;
}

export function createRuntime(options: RuntimeOptions = {}): Runtime {
  const artifacts = new ArtifactStore({ root: options.stateRoot });
  const maxAge = options.artifactMaxAgeMs ?? artifactMaxAgeFromEnv(options.hostEnv ?? process.env);
  const artifactsPruned = maxAge > 0 ? artifacts.prune(maxAge).catch(() => 0) : Promise.resolve(0);
  const defaultSessionId = options.sessionId ?? "default";
  let backend = options.backend;
  const ownsBackend = !backend;
  const getBackend = (): KernelBackend => {
    backend ??= createLocalBackend();
    return backend;
  };

  const envFor = (spec: SessionSpec): KernelEnv =>
    buildKernelEnv({
      hostEnv: options.hostEnv,
      allow: options.allow,
      deny: options.deny,
      extra: options.env,
      sessionFile: options.sessionFile ?? join(artifacts.sessionDir(spec.sessionId), "session.json"),
      artifactsDir: artifacts.artifactsDir(spec.sessionId),
    });

  const sandboxMode =
    options.sandbox === undefined
      ? sandboxFromEnv(options.hostEnv ?? process.env)
      : options.sandbox === true
        ? { network: true }
        : options.sandbox || undefined;
  const sandboxFor = (spec: SessionSpec): KernelSandbox | undefined => {
    if (!sandboxMode) return undefined;
    const dir = artifacts.artifactsDir(spec.sessionId);
    mkdirSync(dir, { recursive: true, mode: 0o700 }); // bound writable: it must exist
    return { writable: [dir], network: sandboxMode.network };
  };

  const start = (spec: SessionSpec, deadline: Deadline, signal?: AbortSignal): Promise<Kernel> => {
    if (signal?.aborted) throw new CallAbortedError(signal.reason);
    return getBackend().startKernel({
      sandbox: sandboxFor(spec),
      kernelName: spec.kernelName ?? options.kernelName,
      python: options.python,
      cwd: spec.cwd,
      env: envFor(spec).env,
      signal,
      startTimeoutMs: Math.max(1, Math.min(deadline.remainingMs(), options.startTimeoutMs ?? 60_000)),
    });
  };

  const starter = async (spec: SessionSpec, deadline: Deadline, signal?: AbortSignal): Promise<Kernel> => {
    deadline.check(signal);
    try {
      return await start(spec, deadline, signal);
    } catch (err) {
      deadline.check(signal);
      if (!isFdExhaustion(err)) throw err;
      await sessions.releaseIdle();
      return start(spec, deadline, signal);
    }
  };

  const sessions = new KernelSessions(starter, envFor, options);
  let disposed: Promise<void> | undefined;

  return {
    sessions,
    artifacts,
    artifactsPruned,
    defaultSessionId,
    kernelEnv: (spec) => envFor(spec).env,
    kernelEnvWithWithheld: envFor,
    kernelSpecNames: () => getBackend().kernelSpecNames({ python: options.python }),
    async kernelSpecInfo(name = options.kernelName ?? "python3") {
      const info = await getBackend().kernelSpecInfo?.(name, { python: options.python });
      return info && { name: info.name, display_name: info.displayName, language: info.language };
    },
    withSession: (spec, callOptions, fn) => sessions.withSession(spec, callOptions, fn),
    dispose() {
      disposed ??= (async () => {
        await sessions.dispose();
        if (ownsBackend && backend) await backend.dispose();
      })();
      return disposed;
    },
  };
}
