/**
 * Which kernels a runtime uses, decided once (docs/backends.md): the local ZeroMQ backend, a remote
 * Jupyter server / Enterprise Gateway (option or the settings' gateway), or the
 * shared local gateway (a jupyter_server this user's nbagent processes share, started on demand).
 * The answer is one value, KernelChoice, that everything below the runtime is given; nothing looks
 * the backend, kernelspec or interpreter up again.
 */

import { createLocalBackend } from "../kernel/index.js";
import type { KernelBackend } from "../kernel/types.js";
import { filterSecrets, type SecretFilterOptions } from "./env.js";
import { createGatewayBackend, DEFAULT_IDLE_CULL_SECONDS, ensureLocalGateway } from "./gateway-deps.js";
import { checkGatewayUrl, type GatewayConnection, localBackendOptions, type Settings } from "./settings.js";

export { checkGatewayUrl, type GatewayConnection } from "./settings.js";

/** RuntimeOptions.gateway: a remote gateway, or "shared" for the shared local one. */
export type GatewaySetting = GatewayConnection | "shared";

/** What the runtime's kernels come from (resolved once; see resolveKernelChoice). */
export type KernelChoice =
  | {
      kind: "local";
      /** The interpreter's path as found (findInterpreter), once. */
      python?: string;
      kernelName: string;
    }
  | {
      kind: "gateway";
      /** The shared local gateway (started on demand from `python`), not a remote one. */
      shared: boolean;
      url: string;
      token?: string;
      headers?: Record<string, string>;
      ca?: string | Buffer;
      kernelName: string;
      /** The shared gateway's interpreter (undefined for a remote gateway: its kernels are its own). */
      python?: string;
    };

/** The inputs of the choice: RuntimeOptions and the settings (runtime/settings.ts). */
export interface KernelChoiceInput {
  gateway?: GatewaySetting;
  python?: string;
  kernelName?: string;
  /** A named session was asked for (CLI --session): with no gateway configured, the shared one is used. */
  sessionName?: string;
  /** The resolved settings: their gateway and interpreter apply unless the options above say otherwise. */
  settings: Pick<Settings, "gateway" | "python">;
}

/** What to connect to, known without starting anything (bad settings throw `Error:` here). */
export type KernelPlan =
  | { kind: "local"; python?: string; kernelName: string }
  | { kind: "remote"; connection: GatewayConnection; kernelName: string }
  | { kind: "shared"; python?: string; kernelName: string };

/**
 * The plan from options and environment, in this order: an explicit `gateway` option (a remote one or
 * "shared"); the settings' gateway (--gateway, NBAGENT_GATEWAY_URL); a named session → the shared
 * gateway; else local kernels.
 */
export function planKernelChoice(input: KernelChoiceInput): KernelPlan {
  const kernelName = input.kernelName ?? "python3";
  const python = input.python ?? input.settings.python;
  const g = input.gateway;
  if (g === "shared") return { kind: "shared", python, kernelName };
  if (g) {
    return {
      kind: "remote",
      connection: { ...g, url: checkGatewayUrl(g.url, "the gateway URL") },
      kernelName,
    };
  }
  if (input.settings.gateway) return { kind: "remote", connection: input.settings.gateway, kernelName };
  if (input.sessionName !== undefined) return { kind: "shared", python, kernelName };
  return { kind: "local", python, kernelName };
}

/** A choice with the backend built for it. */
export interface ResolvedKernelChoice {
  choice: KernelChoice;
  backend: KernelBackend;
  /** What named sessions are keyed by: the gateway's URL; for the shared gateway, its interpreter. */
  identity: string;
  /** The shared gateway's log (its failures, e.g. running out of file descriptors, are written there). */
  logFile?: string;
}

/**
 * Makes the plan real, once: builds the backend (local, or a GatewayBackend for the remote URL), and
 * for the shared gateway finds the live one for the interpreter or starts it, with the host's
 * environment minus its secrets (docs/secrets.md). `nbagent run` and the runtime both come here.
 */
export async function resolveKernelChoice(
  plan: KernelPlan,
  options: SecretFilterOptions & { stateRoot?: string; settings: Settings },
): Promise<ResolvedKernelChoice> {
  const { settings } = options;
  switch (plan.kind) {
    case "local":
      return {
        choice: { kind: "local", python: plan.python, kernelName: plan.kernelName },
        backend: createLocalBackend(localBackendOptions(settings)),
        identity: "local",
      };
    case "remote":
      return {
        choice: { kind: "gateway", shared: false, ...plan.connection, kernelName: plan.kernelName },
        backend: createGatewayBackend(plan.connection),
        identity: plan.connection.url,
      };
    case "shared": {
      const info = await ensureLocalGateway({
        python: plan.python,
        stateRoot: options.stateRoot,
        env: filterSecrets(settings.env, { allow: options.allow, deny: options.deny }),
        hostEnv: settings.env,
        interpreterCacheDir: settings.stateRoot,
        pidNamespace: settings.pidNamespace,
        // The server's own cull: kernels nobody swept (their process died) do not stay forever.
        idleCullSeconds: DEFAULT_IDLE_CULL_SECONDS,
      });
      return {
        choice: {
          kind: "gateway",
          shared: true,
          url: info.url,
          token: info.token,
          kernelName: plan.kernelName,
          python: info.python,
        },
        backend: createGatewayBackend({ url: info.url, token: info.token }),
        identity: `shared:${info.python}`,
        logFile: info.logFile,
      };
    }
  }
}
