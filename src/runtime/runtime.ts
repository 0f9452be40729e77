/**
 * The runtime: one per host process (the CLI, an MCP server, a pi extension). It owns the kernel
 * provider (where every kernel is made, from settings resolved once: kernel-provider.ts), the kept kernel sessions, the named sessions on a gateway
 * (named-sessions.ts) and the artifact store, and is shared by the python tool and the notebook tool.
 * `dispose()` shuts every kernel down, except named sessions' kernels, which are detached and live on.
 */
import { closeSync, constants, openSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BackendFacts, Kernel, KernelBackend, KernelLimits } from "../kernel/types.js";
import { ArtifactStore } from "../output/artifacts.js";
import type { KernelsPlace } from "./backends.js";
import { Deadline } from "./deadline.js";
import type { KernelEnv, SecretFilterOptions } from "./env.js";
import { SettingsError } from "./errors.js";
import { EventBus } from "./events.js";
import type { GatewaySetting, KernelChoice } from "./kernel-choice.js";
import { createKernelProvider, type KernelProvider, type KernelRequest } from "./kernel-provider.js";
import { type NamedSessionInfo, NamedSessions, namedSessionGateway, registryPath } from "./named-sessions.js";
import { keyText, namedKey, type SessionKey, type SessionSpec, type StartedKernel } from "./session.js";
import { SessionRecords } from "./session-record.js";
import {
  type KeptSessionState,
  KernelSessions,
  type KernelSessionsOptions,
  type SessionCallOptions,
  type SessionLease,
} from "./sessions.js";
import type { Settings } from "./settings.js";

export { isFdExhaustion, isGatewayUnreachable } from "./kernel-provider.js";

export interface RuntimeOptions extends KernelSessionsOptions, SecretFilterOptions {
  /**
   * The settings resolved at the edge (runtime/settings.ts: flags, environment, defaults): every
   * option below that is not given comes from them, and kernels start from their host environment.
   */
  settings: Settings;
  /** Kernel backend (default: the one the kernel choice names, created on first use). */
  backend?: KernelBackend;
  /**
   * Kernels from a gateway: a remote one ({url, token?, headers?, ca?}) or "shared" (the shared local
   * gateway, started on demand from `python`). Default: the settings' gateway (--gateway,
   * NBAGENT_GATEWAY_URL); else the shared gateway when sessionName is set; else local kernels.
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
  /** Per-user state root for session dirs and artifacts (default: the settings' stateRoot). */
  stateRoot?: string;
  /** The host's session state file, exported as PI_SESSION_FILE (default <session dir>/session.json). */
  sessionFile?: string;
  /** Extra variables for every kernel (not filtered). */
  env?: Record<string, string>;
  /** Bound on one kernel start, within the call's deadline (default 60 s). */
  startTimeoutMs?: number;
  /**
   * Artifacts older than this are deleted when the runtime is created (default: the settings',
   * NBAGENT_ARTIFACT_DAYS or 7 days; 0 keeps them all).
   */
  artifactMaxAgeMs?: number;
  /**
   * Run kernels in the sandbox (docs/isolation.md): false/undefined no, true with network,
   * { network: false } without. Default: the settings' (--sandbox, NBAGENT_SANDBOX).
   */
  sandbox?: boolean | { network: boolean };
  /** Resource limits for every kernel this runtime starts (docs/isolation.md). */
  limits?: KernelLimits;
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

/** The runtime's live kernels now (docs/kernels-tool.md): values only, tools/ words them. */
export interface KernelListing {
  /** The kept sessions (python sessions, notebook kernels, named sessions), oldest first. */
  sessions: KeptSessionState[];
  /** At most this many kept at once (python sessions and notebook kernels together). */
  maxSessions: number;
  /** An unused kernel is shut down after this long. */
  idleTimeoutMs: number;
  /** Where new kernels come from: this machine, a remote gateway (its URL) or the shared local one. */
  kernels: KernelsPlace;
  /**
   * What the backend does for its kernels: named sessions kept on the server (other processes' are
   * not listed here), memory read here.
   */
  facts: BackendFacts;
}

/** Who asked for a restart: the agent (the kernels tool), or a person in the view (nbagent view). */
export type ActionOrigin = "agent" | "view";

/** What a restart asked for through restartKernel() did. */
export type KernelRestart =
  /** No kept session has that key. */
  | { kind: "unknown" }
  /** A call holds or waits for its kernel: nothing was done (interrupt it first). */
  | { kind: "busy"; state: KeptSessionState }
  /** Its kernel was restarted (or started, when it had none) and set up again: a fresh state. */
  | { kind: "restarted"; state: KeptSessionState };

/** What an interrupt asked for through interruptKernel() did. */
export type KernelInterrupt =
  | { kind: "unknown" }
  /** No call holds its kernel: nothing was sent. */
  | { kind: "idle"; state: KeptSessionState }
  /** A call holds it but its kernel is still starting: nothing was sent. */
  | { kind: "starting"; state: KeptSessionState }
  /** An interrupt was sent to the kernel while `state.holder` held it. */
  | { kind: "interrupted"; state: KeptSessionState };

export interface Runtime {
  readonly sessions: KernelSessions;
  /** What happens in this runtime, as it happens (docs/view.md, "Events"). */
  readonly events: EventBus;
  /** What the options and settings chose (no kernel started; bad settings threw at creation). */
  readonly choice: KernelChoice;
  /** Where this runtime's kernels are made (its settings, its refusal, its backend). */
  readonly kernels: KernelProvider;
  /** What the backend does for its kernels (its facts: kernel/types.ts BackendFacts). */
  readonly facts: BackendFacts;
  /** The named session this runtime was created for (CLI --session), if any. */
  readonly sessionName?: string;
  /**
   * The name a python session is kept under on the gateway, or undefined for an in-process session:
   * on a gateway, a session the caller named (`explicit`) or the runtime's sessionName.
   */
  namedSessionFor(sessionId: string, explicit: boolean): string | undefined;
  /** Named sessions on this runtime's gateway (an Error: when kernels are local). */
  readonly namedSessions: NamedSessionsView;
  readonly artifacts: ArtifactStore;
  /** The records of python sessions, for their export as a notebook (session-record.ts). */
  readonly records: SessionRecords;
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
  /** The live kernels now (nothing is started or asked of a kernel; memory is read locally). */
  listKernels(): KernelListing;
  /**
   * Restarts a kept session's kernel (a deliberate reset, as the python tool's reset does: state
   * lost, set up again) unless a call holds or waits for it.
   */
  restartKernel(key: SessionKey, by?: ActionOrigin): Promise<KernelRestart>;
  /** Sends an interrupt to a kept session's kernel if a call is running in it. */
  interruptKernel(key: SessionKey): Promise<KernelInterrupt>;
  dispose(): Promise<void>;
}

export function createRuntime(options: RuntimeOptions): Runtime {
  const { settings } = options;
  const artifacts = new ArtifactStore({ root: options.stateRoot ?? settings.stateRoot });
  // Every kernel of this runtime comes from here; bad settings are an Error: now, before anything
  // starts, and settings that cannot be honoured together refuse every start (kernel-provider.ts).
  const provider = createKernelProvider({
    gateway: options.gateway,
    sessionName: options.sessionName,
    python: options.python,
    kernelName: options.kernelName,
    settings,
    stateRoot: artifacts.root,
    sandbox: options.sandbox,
    limits: options.limits,
    backend: options.backend,
    env: options.env,
    allow: options.allow,
    deny: options.deny,
    releaseIdle: () => sessions.releaseIdle(),
  });
  const { choice, facts } = provider;
  const maxAge = options.artifactMaxAgeMs ?? settings.artifactMaxAgeMs;
  const prune = maxAge > 0 && pruneDue(artifacts.root, maxAge);
  const artifactsPruned = prune ? artifacts.prune(maxAge).catch(() => 0) : Promise.resolve(0);
  const records = new SessionRecords(artifacts.root);
  if (prune) records.prune(maxAge).catch(() => 0);
  const defaultSessionId = options.sessionId ?? options.sessionName ?? "default";

  let named: NamedSessions | undefined;
  const namedSessions = async (): Promise<NamedSessions> => {
    if (!facts.namedSessions)
      throw new SettingsError(
        "session",
        "named sessions need a gateway (NBAGENT_GATEWAY_URL, --gateway URL, or the shared local gateway)",
      );
    const r = await provider.backend();
    named ??= new NamedSessions({
      file: registryPath(artifacts.root, r.identity),
      gatewayIdentity: r.identity,
      gateway: async () => namedSessionGateway((await provider.backend()).backend),
      idleTimeoutMs: options.idleTimeoutMs,
    });
    return named;
  };

  /** The tool session a kernel is for: its session file and artifacts folder. */
  const sessionOf = (spec: SessionSpec) => ({
    sessionFile: options.sessionFile ?? join(artifacts.sessionDir(spec.sessionId), "session.json"),
    artifactsDir: artifacts.artifactsDir(spec.sessionId),
  });
  const envFor = (spec: SessionSpec): KernelEnv => provider.kernelEnv({ session: sessionOf(spec) });

  const starter = async (
    spec: SessionSpec,
    deadline: Deadline,
    signal?: AbortSignal,
  ): Promise<Kernel | StartedKernel> => {
    deadline.check(signal);
    const request: KernelRequest = {
      cwd: spec.cwd,
      kernelName: spec.kernelName,
      session: sessionOf(spec),
      signal,
      // Within the call's deadline, asked again for a retry.
      startTimeoutMs: () =>
        Math.max(1, Math.min(deadline.remainingMs(), options.startTimeoutMs ?? settings.startTimeoutMs)),
      check: () => deadline.check(signal),
    };
    return provider.start<Kernel | StartedKernel>(request, async (r, startOptions) => {
      if (spec.named && facts.namedSessions)
        return (await namedSessions()).open(spec.named, spec.cwd, startOptions, {
          signal,
          startTimeoutMs: startOptions.startTimeoutMs,
        });
      return r.backend.startKernel(startOptions);
    });
  };

  const events = new EventBus();
  const sessions = new KernelSessions(starter, envFor, options, events);
  const stateOf = (key: SessionKey): KeptSessionState | undefined => {
    const text = keyText(key);
    return sessions.list().find((s) => keyText(s.key) === text);
  };
  let disposed: Promise<void> | undefined;

  return {
    sessions,
    events,
    artifacts,
    records,
    artifactsPruned,
    defaultSessionId,
    choice,
    kernels: provider,
    facts,
    sessionName: options.sessionName,
    namedSessionFor: (sessionId, explicit) =>
      facts.namedSessions &&
      (explicit || (options.sessionName !== undefined && sessionId === options.sessionName))
        ? sessionId
        : undefined,
    namedSessions: {
      list: async () => (await namedSessions()).list(),
      kill: async (name) => (await namedSessions()).kill(name),
      sweep: async () => (await namedSessions()).sweep(),
    },
    kernelEnv: (spec) => envFor(spec).env,
    kernelEnvWithWithheld: envFor,
    kernelSpecNames: () => provider.kernelSpecNames(),
    async kernelSpecInfo(name) {
      const { backend } = await provider.backend();
      const info = await backend.kernelSpecInfo?.(name ?? choice.kernelName, {
        python: provider.python,
      });
      return info && { name: info.name, display_name: info.displayName, language: info.language };
    },
    async withSession(spec, callOptions, fn) {
      if (!spec.named) return sessions.withSession(spec, callOptions, fn);
      return sessions.withSession(
        { ...spec, key: spec.key ?? namedKey(spec.named) },
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
    listKernels() {
      return {
        sessions: sessions.list(),
        maxSessions: sessions.maxSessions,
        idleTimeoutMs: sessions.idleTimeoutMs,
        kernels: provider.place,
        facts,
      };
    },
    async restartKernel(key, by = "agent") {
      const session = sessions.get(key);
      if (!session) return { kind: "unknown" };
      if (session.busy) return { kind: "busy", state: stateOf(key)! };
      // The python tool's reset, on the session's own spec: the queue's turn, a restart, the init.
      // The start within is bounded by startTimeoutMs, as any start.
      await this.withSession(
        { ...session.spec, key },
        { reset: true, deadline: new Deadline(Number.POSITIVE_INFINITY) },
        // The next call on the session says its state went (docs/kernel-state.md).
        async (lease) =>
          lease.recordLoss({ cause: "restart", at: Date.now(), ...(by === "view" ? { by } : {}) }),
      );
      return { kind: "restarted", state: stateOf(key)! };
    },
    async interruptKernel(key) {
      const session = sessions.get(key);
      const state = stateOf(key);
      if (!session || !state) return { kind: "unknown" };
      if (!state.holder) return { kind: "idle", state };
      const kernel = session.currentKernel;
      if (!kernel?.isAlive()) return { kind: "starting", state };
      await kernel.interrupt();
      return { kind: "interrupted", state };
    },
    dispose() {
      disposed ??= (async () => {
        await sessions.dispose();
        await provider.dispose();
        await records.dispose();
      })();
      return disposed;
    },
  };
}

/** How often a runtime looks for old artifacts and records, across all the user's processes. */
const PRUNE_EVERY_MS = 10 * 60 * 1000;

/**
 * Whether this runtime prunes (docs/artifacts.md): not when a runtime of any process did, with the
 * same age, in the last PRUNE_EVERY_MS — the mtime of `<state>/.pruned-<ms>` tells — so a short
 * command does not walk every session's folders each time. The marker is made or touched here
 * (never through a link); without a state folder there is nothing to prune.
 */
function pruneDue(root: string, maxAgeMs: number, now = Date.now()): boolean {
  const marker = join(root, `.pruned-${maxAgeMs}`);
  try {
    if (now - statSync(marker).mtimeMs < PRUNE_EVERY_MS) return false;
  } catch {
    // never pruned with this age, or no state folder yet
  }
  try {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
    closeSync(openSync(marker, flags, 0o600));
  } catch {
    // no state folder (nothing to prune) or not ours to write: prune as before
  }
  return true;
}
