/**
 * The runtime: one per host process (the CLI, an MCP server, a pi extension). It owns the kernel
 * backend (chosen once: kernel-choice.ts), the kept kernel sessions, the named sessions on a gateway
 * (named-sessions.ts) and the artifact store, and is shared by the python tool and the notebook tool.
 * `dispose()` shuts every kernel down, except named sessions' kernels, which are detached and live on.
 */
import { closeSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../kernel/local/limits.js";
import type { Kernel, KernelBackend, KernelLimits, KernelSandbox } from "../kernel/types.js";
import { ArtifactStore, DEFAULT_ARTIFACT_MAX_AGE_MS } from "../output/artifacts.js";
import { CallAbortedError, type Deadline } from "./deadline.js";
import { buildKernelEnv, type KernelEnv, type SecretFilterOptions } from "./env.js";
import { type GatewayKernelBackend, stopLocalGateway } from "./gateway-deps.js";
import {
  type GatewaySetting,
  type KernelChoice,
  type KernelPlan,
  planKernelChoice,
  resolveKernelChoice,
} from "./kernel-choice.js";
import { type NamedSessionInfo, NamedSessions, registryPath } from "./named-sessions.js";
import type { SessionSpec, StartedKernel } from "./session.js";
import {
  KernelSessions,
  type KernelSessionsOptions,
  type SessionCallOptions,
  type SessionLease,
} from "./sessions.js";

export interface RuntimeOptions extends KernelSessionsOptions, SecretFilterOptions {
  /** Kernel backend (default: the one the kernel choice names, created on first use). */
  backend?: KernelBackend;
  /**
   * Kernels from a gateway: a remote one ({url, token?, headers?, ca?}) or "shared" (the shared local
   * gateway, started on demand from `python`). Default: NBAGENT_GATEWAY_URL (+ NBAGENT_GATEWAY_TOKEN)
   * of hostEnv; else the shared gateway when sessionName is set; else local kernels.
   */
  gateway?: GatewaySetting;
  /**
   * A named session (CLI --session NAME): the default session of this runtime, kept on the gateway
   * across processes (docs/backends.md "Named sessions").
   */
  sessionName?: string;
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
  /**
   * Resource limits for each local kernel (docs/isolation.md, "Limits"); 0 in a field: no limit.
   * Unset fields come from NBAGENT_MAX_PROCESSES / NBAGENT_MEMORY_LIMIT of hostEnv, then the defaults
   * (1024 processes and threads, no memory limit).
   */
  limits?: KernelLimits;
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

/** Named sessions of the runtime's gateway (for `nbagent sessions`). */
export interface NamedSessionsView {
  /** Every named session of this gateway: name, kernel id, idle time, state, memory when idle. */
  list(): Promise<NamedSessionInfo[]>;
  /** Ends one (its kernel is shut down; the next call on the name starts over); false when unknown. */
  kill(name: string): Promise<boolean>;
  /** Applies the idle rule now (also done on every named start and list). */
  sweep(): Promise<{ name: string; why: "idle" | "gone" }[]>;
}

export interface Runtime {
  readonly sessions: KernelSessions;
  /** What the options and environment chose (no kernel started; bad settings threw at creation). */
  readonly plan: KernelPlan;
  /** Kernels come from a gateway (remote or shared): sessions can be named (kept across processes). */
  readonly usesGateway: boolean;
  /** The named session this runtime was created for (CLI --session), if any. */
  readonly sessionName?: string;
  /** The choice, resolved (the shared gateway is found or started here). */
  kernelChoice(): Promise<KernelChoice>;
  /**
   * The name a python session is kept under on the gateway, or undefined for an in-process session:
   * on a gateway, a session the caller named (`explicit`) or the runtime's sessionName.
   */
  namedSessionFor(sessionId: string, explicit: boolean): string | undefined;
  /** Named sessions on this runtime's gateway (an Error: when kernels are local). */
  readonly namedSessions: NamedSessionsView;
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

const FD_EXHAUSTION_TEXT = /too many open files|EMFILE|ENFILE|\[Errno 2[34]\]/i;

/** A log file's size now (0 when absent). */
function logSize(file: string | undefined): number {
  try {
    return file ? statSync(file).size : 0;
  } catch {
    return 0;
  }
}

/** The log has a line matching `re` past byte `from` (read at most its last 64 KiB). */
function logSays(file: string | undefined, from: number, re: RegExp): boolean {
  if (!file) return false;
  try {
    const size = statSync(file).size;
    const start = Math.max(from, size - 64 * 1024);
    if (size <= start) return false;
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      return re.test(buf.toString("utf8"));
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * EMFILE / ENFILE / "Too many open files" (S22): here, or in a gateway's answer (jupyter_server puts
 * the Python traceback, `OSError: [Errno 24] Too many open files`, in its 500 reply's body).
 */
export function isFdExhaustion(err: unknown): boolean {
  const e = err as { code?: string; message?: string; body?: string } | undefined;
  const text = FD_EXHAUSTION_TEXT;
  return (
    e?.code === "EMFILE" ||
    e?.code === "ENFILE" ||
    text.test(e?.message ?? "") ||
    (typeof e?.body === "string" && text.test(e.body))
  );
}

/** NBAGENT_ARTIFACT_DAYS (a number of days; 0 keeps every artifact), else the default. */
export function artifactMaxAgeFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env.NBAGENT_ARTIFACT_DAYS?.trim();
  const days = Number(text);
  return text && Number.isFinite(days) && days >= 0 ? days * 24 * 3600 * 1000 : DEFAULT_ARTIFACT_MAX_AGE_MS;
}

/** The gateway could not be reached at all (it stopped, or was restarted on another port/token). */
export function isGatewayUnreachable(err: unknown): boolean {
  const e = err as
    | { code?: string; status?: number; message?: string; cause?: { code?: string } }
    | undefined;
  const code = e?.code ?? e?.cause?.code;
  return (
    (err as Error | undefined)?.name === "GatewayUnreachableError" ||
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    e?.status === 401 ||
    e?.status === 403 ||
    /ECONNREFUSED|ECONNRESET|socket hang up|fetch failed/i.test(e?.message ?? "")
  );
}

interface Resolved {
  choice: KernelChoice;
  backend: KernelBackend;
  /** What the named-session registry is keyed by (the URL; for the shared gateway its interpreter). */
  identity: string;
  /** The shared gateway's log. */
  logFile?: string;
  owned: boolean;
}

export function createRuntime(options: RuntimeOptions = {}): Runtime {
  const hostEnv = options.hostEnv ?? process.env;
  // Bad settings (a gateway URL that is not one) are an Error: now, before anything starts.
  const plan = planKernelChoice({
    gateway: options.gateway,
    python: options.python,
    kernelName: options.kernelName,
    sessionName: options.sessionName,
    hostEnv,
  });
  const usesGateway = options.backend ? options.backend.name === "gateway" : plan.kind !== "local";
  const artifacts = new ArtifactStore({ root: options.stateRoot });
  const maxAge = options.artifactMaxAgeMs ?? artifactMaxAgeFromEnv(hostEnv);
  const artifactsPruned = maxAge > 0 ? artifacts.prune(maxAge).catch(() => 0) : Promise.resolve(0);
  const defaultSessionId = options.sessionId ?? options.sessionName ?? "default";

  const resolveNow = async (): Promise<Resolved> => {
    if (options.backend) {
      const choice: KernelChoice =
        plan.kind === "remote"
          ? { kind: "gateway", shared: false, ...plan.connection, kernelName: plan.kernelName }
          : { kind: "local", python: plan.python, kernelName: plan.kernelName };
      return { choice, backend: options.backend, identity: `backend:${options.backend.name}`, owned: false };
    }
    return {
      ...(await resolveKernelChoice(plan, {
        stateRoot: artifacts.root,
        hostEnv,
        allow: options.allow,
        deny: options.deny,
      })),
      owned: true,
    };
  };
  let resolving: Promise<Resolved> | undefined;
  const resolved = (): Promise<Resolved> => {
    if (!resolving) {
      const p = resolveNow();
      resolving = p;
      p.catch(() => {
        if (resolving === p) resolving = undefined; // the next call tries again
      });
    }
    return resolving;
  };
  /** Drops the shared gateway's backend so the next use finds (or starts) the gateway again. */
  const forgetGateway = async (stop: boolean): Promise<void> => {
    const old = resolving;
    resolving = undefined;
    const r = await old?.catch(() => undefined);
    if (r?.owned) await r.backend.dispose().catch(() => {});
    if (stop && r?.choice.kind === "gateway" && r.choice.shared)
      await stopLocalGateway({ python: r.choice.python, stateRoot: artifacts.root }).catch(() => false);
  };

  let named: NamedSessions | undefined;
  const namedSessions = async (): Promise<NamedSessions> => {
    const r = await resolved();
    if (r.choice.kind !== "gateway" && !usesGateway)
      throw new Error(
        "Error: named sessions need a gateway (NBAGENT_GATEWAY_URL, --gateway URL, or the shared local gateway)",
      );
    named ??= new NamedSessions({
      file: registryPath(artifacts.root, r.identity),
      gatewayIdentity: r.identity,
      gateway: async () => (await resolved()).backend as GatewayKernelBackend,
      idleTimeoutMs: options.idleTimeoutMs,
    });
    return named;
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
      ? sandboxFromEnv(hostEnv)
      : options.sandbox === true
        ? { network: true }
        : options.sandbox || undefined;
  const fromEnv = resolveLimits({}, hostEnv);
  const limits: Required<KernelLimits> = {
    maxProcesses: options.limits?.maxProcesses ?? fromEnv.maxProcesses,
    memoryBytes: options.limits?.memoryBytes ?? fromEnv.memoryBytes,
  };
  const limitsAsked =
    options.limits?.maxProcesses !== undefined ||
    options.limits?.memoryBytes !== undefined ||
    !!hostEnv.NBAGENT_MAX_PROCESSES?.trim() ||
    !!hostEnv.NBAGENT_MEMORY_LIMIT?.trim();
  const sandboxFor = (spec: SessionSpec): KernelSandbox | undefined => {
    if (!sandboxMode) return undefined;
    const dir = artifacts.artifactsDir(spec.sessionId);
    mkdirSync(dir, { recursive: true, mode: 0o700 }); // bound writable: it must exist
    return { writable: [dir], network: sandboxMode.network };
  };

  const start = async (
    spec: SessionSpec,
    deadline: Deadline,
    signal?: AbortSignal,
  ): Promise<Kernel | StartedKernel> => {
    if (signal?.aborted) throw new CallAbortedError(signal.reason);
    const { choice, backend } = await resolved();
    if (sandboxMode && choice.kind === "gateway")
      throw new Error(
        "Error: the sandbox (NBAGENT_SANDBOX, --sandbox) applies to local kernels; kernels on a gateway run where the gateway runs them. Unset one of the two.",
      );
    if (limitsAsked && choice.kind === "gateway")
      throw new Error(
        "Error: the kernel limits (--max-processes, --memory-limit, NBAGENT_MAX_PROCESSES, NBAGENT_MEMORY_LIMIT) apply to local kernels; kernels on a gateway run with the limits the gateway gives them. Unset one of the two.",
      );
    const startTimeoutMs = Math.max(1, Math.min(deadline.remainingMs(), options.startTimeoutMs ?? 60_000));
    const startOptions = {
      sandbox: sandboxFor(spec),
      // A gateway's kernels run where and as the gateway runs them: its own limits apply there.
      limits: choice.kind === "local" ? limits : undefined,
      kernelName: spec.kernelName ?? choice.kernelName,
      python: choice.kind === "local" ? choice.python : undefined,
      cwd: spec.cwd,
      env: envFor(spec).env,
      signal,
      startTimeoutMs,
    };
    if (spec.named && usesGateway)
      return (await namedSessions()).open(spec.named, spec.cwd, startOptions, { signal, startTimeoutMs });
    return backend.startKernel(startOptions);
  };

  const starter = async (
    spec: SessionSpec,
    deadline: Deadline,
    signal?: AbortSignal,
  ): Promise<Kernel | StartedKernel> => {
    deadline.check(signal);
    const before = await resolving?.catch(() => undefined);
    const logFrom = logSize(before?.logFile);
    try {
      return await start(spec, deadline, signal);
    } catch (err) {
      deadline.check(signal);
      const r = await resolving?.catch(() => undefined);
      const shared = r?.choice.kind === "gateway" && r.choice.shared;
      // The shared gateway may run out of descriptors anywhere (creating the kernel, opening its
      // channels); its own log says so even when the error we got does not.
      const gatewayOutOfFds = shared && r === before && logSays(r?.logFile, logFrom, FD_EXHAUSTION_TEXT);
      if (isFdExhaustion(err) || gatewayOutOfFds) {
        // S22: let go of every idle kernel; on the shared gateway also stop the gateway itself
        // (its process is out of descriptors); the retry starts a new one on demand.
        await sessions.releaseIdle();
        if (shared) await forgetGateway(true);
        return start(spec, deadline, signal);
      }
      if (shared && isGatewayUnreachable(err)) {
        // Another process stopped or replaced the shared gateway: find (or start) the current one.
        await forgetGateway(false);
        return start(spec, deadline, signal);
      }
      throw err;
    }
  };

  const sessions = new KernelSessions(starter, envFor, options);
  let disposed: Promise<void> | undefined;

  return {
    sessions,
    artifacts,
    artifactsPruned,
    defaultSessionId,
    plan,
    usesGateway,
    sessionName: options.sessionName,
    kernelChoice: async () => (await resolved()).choice,
    namedSessionFor: (sessionId, explicit) =>
      usesGateway && (explicit || (options.sessionName !== undefined && sessionId === options.sessionName))
        ? sessionId
        : undefined,
    namedSessions: {
      list: async () => (await namedSessions()).list(),
      kill: async (name) => (await namedSessions()).kill(name),
      sweep: async () => (await namedSessions()).sweep(),
    },
    kernelEnv: (spec) => envFor(spec).env,
    kernelEnvWithWithheld: envFor,
    async kernelSpecNames() {
      const { choice, backend } = await resolved();
      return backend.kernelSpecNames({ python: choice.kind === "local" ? choice.python : undefined });
    },
    async kernelSpecInfo(name) {
      const { choice, backend } = await resolved();
      const info = await backend.kernelSpecInfo?.(name ?? choice.kernelName, {
        python: choice.kind === "local" ? choice.python : undefined,
      });
      return info && { name: info.name, display_name: info.displayName, language: info.language };
    },
    async withSession(spec, callOptions, fn) {
      if (!spec.named) return sessions.withSession(spec, callOptions, fn);
      return sessions.withSession(
        { ...spec, key: spec.key ?? `named\0${spec.named}` },
        callOptions,
        async (lease) => {
          try {
            return await fn(lease);
          } finally {
            // Its idle time (for any process's sweep) starts when this call ends.
            const id = lease.named?.kernelId ?? sessions.get(lease.key)?.named?.kernelId;
            if (id) await (await namedSessions()).touch(spec.named!, id).catch(() => {});
          }
        },
      );
    },
    dispose() {
      disposed ??= (async () => {
        await sessions.dispose();
        const r = await resolving?.catch(() => undefined);
        if (r?.owned) await r.backend.dispose();
      })();
      return disposed;
    },
  };
}
