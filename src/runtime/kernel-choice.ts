/**
 * Which kernels a runtime uses, decided once (docs/backends.md): the local ZeroMQ backend, a remote
 * Jupyter server / Enterprise Gateway (option or the settings' gateway), or the
 * shared local gateway (a jupyter_server this user's nbagent processes share, started on demand).
 * The answer is one value, KernelChoice; its kind's entry in the registry (backends.ts) says what its
 * kernels can have and builds the backend (BuiltBackend), which is what everything below the runtime
 * is given; nothing looks the backend, kernelspec or interpreter up again.
 */

import type { KernelBackend } from "../kernel/types.js";
import { checkGatewayUrl, type GatewayConnection, type Settings } from "./settings.js";

export { checkGatewayUrl, type GatewayConnection } from "./settings.js";

/** RuntimeOptions.gateway: a remote gateway, or "shared" for the shared local one. */
export type GatewaySetting = GatewayConnection | "shared";

/** The inputs of the choice: RuntimeOptions and the settings (runtime/settings.ts). */
export interface KernelChoiceInput {
  gateway?: GatewaySetting;
  python?: string;
  kernelName?: string;
  /** A named session was asked for (CLI --session): with no gateway configured, the shared one is used. */
  sessionName?: string;
  /** The resolved settings: their gateway and interpreter apply unless the options above say otherwise. */
  settings: Pick<Settings, "gateway" | "python" | "kernelName">;
}

/**
 * What the runtime's kernels come from, known without starting anything (a bad gateway URL option
 * throws a SettingsError here): local kernels, a remote gateway, or the shared local gateway (found or
 * started when the backend is built: buildKernelBackend).
 */
export type KernelChoice =
  | {
      kind: "local";
      /** An explicit interpreter; else the local backend finds one (kernel/interpreter.ts). */
      python?: string;
      kernelName: string;
    }
  | { kind: "remote"; connection: GatewayConnection; kernelName: string }
  | {
      kind: "shared";
      /** The interpreter the shared gateway runs; else one is found when it is started. */
      python?: string;
      kernelName: string;
    };

/**
 * The choice from options and settings, in this order: an explicit `gateway` option (a remote one or
 * "shared"); the settings' gateway (--gateway, NBAGENT_GATEWAY_URL); a named session → the shared
 * gateway; else local kernels.
 */
export function planKernelChoice(input: KernelChoiceInput): KernelChoice {
  const kernelName = input.kernelName ?? input.settings.kernelName ?? "python3";
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

/** The shared local gateway as found or started: where it is, its interpreter, its log. */
export interface SharedGateway {
  url: string;
  token: string;
  python: string;
  /** Its failures (e.g. running out of file descriptors) are written there. */
  logFile: string;
}

/** A choice with the backend built for it. */
export interface BuiltBackend {
  choice: KernelChoice;
  backend: KernelBackend;
  /** What named sessions are keyed by: the gateway's URL; for the shared gateway, its interpreter. */
  identity: string;
  /** The shared gateway this backend speaks to (choice "shared", built here). */
  shared?: SharedGateway;
  /** Built here (disposed with its owner), not given by the host. */
  owned: boolean;
}
