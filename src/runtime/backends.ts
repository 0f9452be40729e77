/**
 * The kinds of backend a runtime can choose, one entry each (docs/backends.md "Backends as a
 * registry"): what it does for its kernels (its BackendFacts, known before anything is built), how
 * it is built from the settings, where its kernels are (as the kernels listing reports it), and why a
 * setting its facts deny is refused. The runtime asks these, never the kind's name. A new backend is
 * a folder under src/kernel/ (its backend and its facts), one entry here, and the setting that
 * chooses it (kernel-choice.ts, planKernelChoice).
 *
 * The gateway entries know their facts without loading the gateway code (runtime/gateway-deps.ts).
 */

import { GATEWAY_FACTS } from "../kernel/gateway/facts.js";
import { LOCAL_FACTS } from "../kernel/local/facts.js";
import type { BackendFacts } from "../kernel/types.js";
import { filterSecrets, type SecretFilterOptions } from "./env.js";
import { createGatewayBackend, ensureLocalGateway } from "./gateway-deps.js";
import type { BuiltBackend, KernelChoice } from "./kernel-choice.js";
import { localBackendOptions, type Settings } from "./settings.js";

/** Where a runtime's kernels are (the kernels listing): this machine, a gateway's URL, the shared local gateway. */
export type KernelsPlace = { kind: "local" } | { kind: "remote"; url: string } | { kind: "shared" };

/** The refusals (docs/isolation.md "Where kernels are made"): the same text on every road. */
export const SANDBOX_ON_GATEWAY =
  "the sandbox (NBAGENT_SANDBOX, --sandbox) applies to local kernels; kernels on a gateway run where the gateway runs them. Unset one of the two.";
export const SANDBOX_ON_SHARED_GATEWAY =
  "the sandbox (NBAGENT_SANDBOX, --sandbox) applies to local kernels; a named session (--session NAME) is kept on the shared local gateway, whose kernels are not sandboxed. Unset one of the two.";
export const LIMITS_ON_GATEWAY =
  "the kernel limits (--max-processes, --memory-limit, --cpus, NBAGENT_MAX_PROCESSES, NBAGENT_MEMORY_LIMIT, NBAGENT_CPUS) apply to local kernels; kernels on a gateway run with the limits the gateway gives them. Unset one of the two.";

/** What building a backend may use besides its choice. */
export interface BuildContext extends SecretFilterOptions {
  /** The per-user state root (the shared gateway's files live there). */
  stateRoot?: string;
  settings: Settings;
}

/** What the words of a refusal are when a setting asks for what the facts deny. */
export interface Refusals {
  /** The sandbox was asked for and `facts.sandbox` is false. */
  sandbox: string;
  /** Limits were asked for and `facts.limits` is false. */
  limits: string;
}

export interface BackendKind<C extends KernelChoice> {
  readonly facts: BackendFacts;
  readonly refusals: Refusals;
  /** The backend for this choice (a server found or started on the way, for the shared gateway). */
  build(choice: C, context: BuildContext): Promise<BuiltBackend>;
  place(choice: C): KernelsPlace;
}

type KindOf<K extends KernelChoice["kind"]> = BackendKind<Extract<KernelChoice, { kind: K }>>;

/** Refusals of a backend whose facts allow everything (never said). */
const NONE: Refusals = { sandbox: "", limits: "" };

/** The registry: one entry per kind of KernelChoice. */
export const BACKENDS: { readonly [K in KernelChoice["kind"]]: KindOf<K> } = {
  local: {
    facts: LOCAL_FACTS,
    refusals: NONE,
    // Loaded with the first kernel: a call that starts none (a notebook read or edit) does not pay
    // for the kernel code and what it imports (child_process, the fork server).
    build: async (choice, { settings }) => ({
      choice,
      backend: (await import("../kernel/local/backend.js")).createLocalBackend(localBackendOptions(settings)),
      identity: "local",
      owned: true,
    }),
    place: () => ({ kind: "local" }),
  },
  remote: {
    facts: GATEWAY_FACTS,
    refusals: { sandbox: SANDBOX_ON_GATEWAY, limits: LIMITS_ON_GATEWAY },
    build: async (choice, { settings }) => ({
      choice,
      backend: await createGatewayBackend(choice.connection, settings.startTimeoutMs),
      identity: choice.connection.url,
      owned: true,
    }),
    place: (choice) => ({ kind: "remote", url: choice.connection.url }),
  },
  shared: {
    // A server on this machine, started by nbagent with the host's environment (less its secrets):
    // its kernels are given it too.
    facts: { ...GATEWAY_FACTS, hostEnvironment: true },
    refusals: { sandbox: SANDBOX_ON_SHARED_GATEWAY, limits: LIMITS_ON_GATEWAY },
    // Found for the interpreter or started, with the host's environment minus its secrets (docs/secrets.md).
    async build(choice, { settings, stateRoot, allow, deny }) {
      const info = await ensureLocalGateway({
        python: choice.python,
        stateRoot,
        env: filterSecrets(settings.env, { allow, deny }),
        hostEnv: settings.env,
        interpreterCacheDir: settings.stateRoot,
        pidNamespace: settings.pidNamespace,
      });
      return {
        choice,
        backend: await createGatewayBackend({ url: info.url, token: info.token }, settings.startTimeoutMs),
        identity: `shared:${info.python}`,
        shared: { url: info.url, token: info.token, python: info.python, logFile: info.logFile },
        owned: true,
      };
    },
    place: () => ({ kind: "shared" }),
  },
};

/** The registry's entry for a choice. */
export function backendOf<C extends KernelChoice>(choice: C): BackendKind<C> {
  return BACKENDS[choice.kind] as unknown as BackendKind<C>;
}

/**
 * Makes the choice real, once, by its entry: builds the backend (local, or a GatewayBackend for the
 * remote URL), and for the shared gateway finds the live one for the interpreter or starts it.
 * `nbagent run` and the runtime both come here (through the kernel provider).
 */
export function buildKernelBackend(choice: KernelChoice, context: BuildContext): Promise<BuiltBackend> {
  return backendOf(choice).build(choice, context);
}
