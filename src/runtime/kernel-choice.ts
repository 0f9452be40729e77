/**
 * Which kernels a runtime uses, decided once (docs/backends.md): the local ZeroMQ backend, a remote
 * Jupyter server / Enterprise Gateway (option or NBAGENT_GATEWAY_URL + NBAGENT_GATEWAY_TOKEN), or the
 * shared local gateway (a jupyter_server this user's nbagent processes share, started on demand).
 * The answer is one value, KernelChoice, that everything below the runtime is given; nothing looks
 * the backend, kernelspec or interpreter up again.
 */
import { createLocalBackend } from "../kernel/index.js";
import type { KernelBackend } from "../kernel/types.js";
import { filterSecrets, type SecretFilterOptions } from "./env.js";
import { SettingsError } from "./errors.js";
import { createGatewayBackend, DEFAULT_IDLE_CULL_SECONDS, ensureLocalGateway } from "./gateway-deps.js";

/** A gateway to reach: its base URL, token (sent as `Authorization: token <t>`), headers and CA. */
export interface GatewayConnection {
  url: string;
  token?: string;
  headers?: Record<string, string>;
  /** PEM of a private CA for https/wss. */
  ca?: string | Buffer;
}

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

/** The inputs of the choice: RuntimeOptions and the host environment. */
export interface KernelChoiceInput {
  gateway?: GatewaySetting;
  python?: string;
  kernelName?: string;
  /** A named session was asked for (CLI --session): with no gateway configured, the shared one is used. */
  sessionName?: string;
  /** NBAGENT_GATEWAY_URL, NBAGENT_GATEWAY_TOKEN, NBAGENT_PYTHON (default process.env). */
  hostEnv?: NodeJS.ProcessEnv;
}

/** What to connect to, known without starting anything (bad settings throw a SettingsError here). */
export type KernelPlan =
  | { kind: "local"; python?: string; kernelName: string }
  | { kind: "remote"; connection: GatewayConnection; kernelName: string }
  | { kind: "shared"; python?: string; kernelName: string };

/** An http(s) URL without credentials in it, trailing slashes removed; else a SettingsError. */
export function checkGatewayUrl(url: string, from: string): string {
  const text = url.trim();
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new SettingsError(
      from,
      `${from} is not a URL: ${JSON.stringify(url)}. Give the gateway's base URL, e.g. http://host:8888.`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new SettingsError(
      from,
      `${from} must be an http:// or https:// URL (got ${JSON.stringify(url)}). Give the gateway's base URL, e.g. http://host:8888.`,
    );
  }
  if (parsed.username || parsed.password) {
    throw new SettingsError(
      from,
      `${from} must not carry credentials in the URL; put the token in NBAGENT_GATEWAY_TOKEN.`,
    );
  }
  if (parsed.search || parsed.hash) {
    throw new SettingsError(
      from,
      `${from} must be the gateway's base URL without a query or fragment (got ${JSON.stringify(url)}); put the token in NBAGENT_GATEWAY_TOKEN.`,
    );
  }
  return text.replace(/\/+$/, "");
}

/**
 * The plan from options and environment, in this order: an explicit `gateway` option (a remote one or
 * "shared"); NBAGENT_GATEWAY_URL (+ NBAGENT_GATEWAY_TOKEN); a named session → the shared gateway;
 * else local kernels.
 */
export function planKernelChoice(input: KernelChoiceInput = {}): KernelPlan {
  const env = input.hostEnv ?? process.env;
  const kernelName = input.kernelName ?? "python3";
  const python = input.python ?? (env.NBAGENT_PYTHON?.trim() || undefined);
  const g = input.gateway;
  if (g === "shared") return { kind: "shared", python, kernelName };
  if (g) {
    return {
      kind: "remote",
      connection: { ...g, url: checkGatewayUrl(g.url, "the gateway URL") },
      kernelName,
    };
  }
  const url = env.NBAGENT_GATEWAY_URL?.trim();
  if (url) {
    const token = env.NBAGENT_GATEWAY_TOKEN?.trim() || undefined;
    return {
      kind: "remote",
      connection: { url: checkGatewayUrl(url, "NBAGENT_GATEWAY_URL"), token },
      kernelName,
    };
  }
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
  options: SecretFilterOptions & { stateRoot?: string; hostEnv?: NodeJS.ProcessEnv } = {},
): Promise<ResolvedKernelChoice> {
  switch (plan.kind) {
    case "local":
      return {
        choice: { kind: "local", python: plan.python, kernelName: plan.kernelName },
        backend: createLocalBackend(),
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
        env: filterSecrets(options.hostEnv ?? process.env, { allow: options.allow, deny: options.deny }),
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
