/**
 * The user's settings, resolved once at the edge (the CLI, the MCP server, the pi extension) and
 * passed down: command-line flags win over the environment, which wins over the defaults. Every
 * value is checked here, once, with one error text per bad value; nothing below the edge reads the
 * environment (docs/cli.md lists the variables).
 *
 * The type lives on the runtime floor so that the runtime (and what it builds: the kernel provider,
 * the kernel choice, the local backend's options) can take it; the resolver lives beside it and reads
 * only the environment record it is given, which the edges capture from their process.
 */
import { join, resolve } from "node:path";
import type { LocalBackendOptions } from "../kernel/local/backend.js";
import { findBwrap } from "../kernel/local/bwrap.js";
import { resolveLimits } from "../kernel/local/limit-values.js";
import type { KernelLimits } from "../kernel/types.js";
import { stateDir } from "../sys/state-dir.js";
import { SettingsError } from "./errors.js";

export { SettingsError } from "./errors.js";

/** An environment as a process has it (names to values; undefined values are absent). */
export type HostEnv = Readonly<Record<string, string | undefined>>;

/** A gateway to reach: its base URL, token (sent as `Authorization: token <t>`), headers and CA. */
export interface GatewayConnection {
  url: string;
  token?: string;
  headers?: Record<string, string>;
  /** PEM of a private CA for https/wss. */
  ca?: string | Buffer;
  /**
   * How long to keep reconnecting a kernel's lost connection before giving it up
   * (NBAGENT_GATEWAY_RECONNECT_SECONDS; default 120 s, docs/backends.md "Across a real network").
   */
  reconnectSeconds?: number;
}

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

/** The sandbox asked for (docs/isolation.md): with or without network. */
export interface SandboxMode {
  network: boolean;
}

/** The wait budget of a python call or notebook run when none is set (docs/runs.md). */
export const DEFAULT_WAIT_SECONDS = 50;

export interface Settings {
  /**
   * The host's environment, captured at the edge: what kernels start from (secrets filtered out,
   * docs/secrets.md), and where the interpreter, kernelspecs and bubblewrap are looked for (PATH,
   * VIRTUAL_ENV, JUPYTER_PATH …). Data passed down, not configuration.
   */
  env: HostEnv;
  /** An explicit interpreter for kernels (NBAGENT_PYTHON); else one is found (kernel/interpreter.ts). */
  python?: string;
  /**
   * The kernelspec the python tool starts, and a notebook naming none (or an unknown Python one)
   * runs with (NBAGENT_KERNEL; else python3): a gateway may call its Python kernel otherwise.
   */
  kernelName?: string;
  /**
   * Bound on a kernel's start, any backend (NBAGENT_START_SECONDS; default 60 s): a cluster that
   * schedules a pod per kernel may need longer. A call's own timeout still bounds its start.
   */
  startTimeoutMs: number;
  /** The debug log's file (NBAGENT_LOG; sys/debug-log.ts): kernels' lifecycle events, one JSON line each. */
  logFile?: string;
  /** A remote gateway (--gateway / NBAGENT_GATEWAY_URL, token --gateway-token-file / NBAGENT_GATEWAY_TOKEN). */
  gateway?: GatewayConnection;
  /** The sandbox for local kernels (--sandbox / NBAGENT_SANDBOX); undefined: none. */
  sandbox?: SandboxMode;
  /** The limits for local kernels (--max-processes, --memory-limit, --cpus / NBAGENT_MAX_PROCESSES, NBAGENT_MEMORY_LIMIT, NBAGENT_CPUS). */
  limits: Required<KernelLimits>;
  /** The limits were asked for (a flag or a variable), not just the defaults: refused with a gateway. */
  limitsAsked: boolean;
  /** Artifacts older than this are deleted when a runtime starts (NBAGENT_ARTIFACT_DAYS; 0 keeps all). */
  artifactMaxAgeMs: number;
  /** Seconds a call is waited for before it goes on in the background (NBAGENT_WAIT_SECONDS). */
  waitSeconds: number;
  /** The per-user state directory (NBAGENT_STATE_DIR, else $TMPDIR/nbagent-<uid>). */
  stateRoot: string;
  /** Local kernels in a PID namespace of their own where possible (NBAGENT_PIDNS=0 turns it off). */
  pidNamespace: boolean;
  /** Local kernels forked from a pre-warmed server (NBAGENT_FORK_SERVER=0 turns it off). */
  forkServer: boolean;
  /** The bubblewrap executable (NBAGENT_BWRAP, else on PATH), if any. */
  bwrap?: string;
}

/** What the command line gave (raw texts; checked by resolveSettings). */
export interface SettingsFlags {
  /** --sandbox ("1") or --sandbox=VALUE. */
  sandbox?: string;
  /** --max-processes N. */
  maxProcesses?: string;
  /** --memory-limit SIZE. */
  memoryLimit?: string;
  /** --cpus N. */
  cpus?: string;
  /** --gateway URL. */
  gatewayUrl?: string;
  /** The token read from --gateway-token-file. */
  gatewayToken?: string;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v?.trim() ? v : undefined;
}

/** "", "0", "off" → none; "1", "on" → with network; "net-off" → without; else an error text. */
function parseSandbox(value: string, from: string): SandboxMode | undefined {
  const v = value.trim().toLowerCase();
  if (v === "" || v === "0" || v === "off") return undefined;
  if (v === "1" || v === "on") return { network: true };
  if (v === "net-off") return { network: false };
  throw new SettingsError(from.replace(/=$/, ""), `${from}${value} is not one of 1 (on), net-off, 0 (off)`);
}

/** Artifacts older than this are removed when a runtime starts (NBAGENT_ARTIFACT_DAYS overrides; 0 keeps all). */
export const DEFAULT_ARTIFACT_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** NBAGENT_ARTIFACT_DAYS (a number of days; 0 keeps every artifact), else the default. */
export function artifactMaxAgeFromEnv(env: HostEnv): number {
  const text = env.NBAGENT_ARTIFACT_DAYS?.trim();
  const days = Number(text);
  return text && Number.isFinite(days) && days >= 0 ? days * 24 * 3600 * 1000 : DEFAULT_ARTIFACT_MAX_AGE_MS;
}

/** NBAGENT_WAIT_SECONDS (a positive number), else the default (a little under common 60 s client timeouts). */
export function waitSecondsFromEnv(env: HostEnv): number {
  const v = Number(env.NBAGENT_WAIT_SECONDS);
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_WAIT_SECONDS;
}

/** A kernel's start bound when NBAGENT_START_SECONDS is unset. */
export const DEFAULT_START_SECONDS = 60;

/** A variable holding a number of seconds greater than 0, if set; anything else is a SettingsError. */
function secondsFromEnv(env: HostEnv, name: string): number | undefined {
  const text = nonEmpty(env[name]);
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new SettingsError(
      name,
      `${name} must be a number of seconds greater than 0, got ${JSON.stringify(text)}`,
    );
  return seconds;
}

/**
 * The settings from the command line's flags and the environment (flags win), checked: a bad value
 * throws a SettingsError whose message names the flag or variable it came from.
 */
export function resolveSettings(flags: SettingsFlags, env: HostEnv): Settings {
  const sandbox =
    flags.sandbox !== undefined
      ? parseSandbox(flags.sandbox, "--sandbox=")
      : env.NBAGENT_SANDBOX !== undefined
        ? parseSandbox(env.NBAGENT_SANDBOX, "NBAGENT_SANDBOX=")
        : undefined;

  let limits: Required<KernelLimits>;
  try {
    limits = resolveLimits(flags, env);
  } catch (err) {
    throw new SettingsError("limits", (err as Error).message);
  }
  const limitsAsked =
    flags.maxProcesses !== undefined ||
    flags.memoryLimit !== undefined ||
    flags.cpus !== undefined ||
    nonEmpty(env.NBAGENT_MAX_PROCESSES) !== undefined ||
    nonEmpty(env.NBAGENT_MEMORY_LIMIT) !== undefined ||
    nonEmpty(env.NBAGENT_CPUS) !== undefined;

  let gateway: GatewayConnection | undefined;
  const url = flags.gatewayUrl ?? nonEmpty(env.NBAGENT_GATEWAY_URL);
  if (url !== undefined) {
    const checked = checkGatewayUrl(
      url,
      flags.gatewayUrl !== undefined ? "--gateway" : "NBAGENT_GATEWAY_URL",
    );
    const token = flags.gatewayToken ?? (env.NBAGENT_GATEWAY_TOKEN?.trim() || undefined);
    const reconnectSeconds = secondsFromEnv(env, "NBAGENT_GATEWAY_RECONNECT_SECONDS");
    gateway = { url: checked, token, ...(reconnectSeconds !== undefined ? { reconnectSeconds } : {}) };
  }

  const kernelName = nonEmpty(env.NBAGENT_KERNEL)?.trim();
  // Jupyter's own rule for a kernelspec's name (jupyter_client's kernelspec module).
  if (kernelName !== undefined && !/^[a-z0-9._-]+$/i.test(kernelName))
    throw new SettingsError(
      "NBAGENT_KERNEL",
      `NBAGENT_KERNEL must be a kernelspec name (letters, digits, '.', '_', '-'), got ${JSON.stringify(kernelName)}`,
    );
  const startSeconds = secondsFromEnv(env, "NBAGENT_START_SECONDS");

  return {
    env,
    python: env.NBAGENT_PYTHON?.trim() || undefined,
    ...(kernelName !== undefined ? { kernelName } : {}),
    startTimeoutMs: (startSeconds ?? DEFAULT_START_SECONDS) * 1000,
    ...(nonEmpty(env.NBAGENT_LOG) ? { logFile: resolve(env.NBAGENT_LOG!.trim()) } : {}),
    gateway,
    sandbox,
    limits,
    limitsAsked,
    artifactMaxAgeMs: artifactMaxAgeFromEnv(env),
    waitSeconds: waitSecondsFromEnv(env),
    stateRoot: stateDir(env),
    pidNamespace: env.NBAGENT_PIDNS !== "0",
    forkServer: env.NBAGENT_FORK_SERVER !== "0",
    bwrap: findBwrap(env),
  };
}

/** What the local backend takes from the settings: where to look, where to keep files, how to isolate. */
export function localBackendOptions(settings: Settings): LocalBackendOptions {
  return {
    hostEnv: settings.env,
    runtimeDir: join(settings.stateRoot, "kernels"),
    interpreterCacheDir: settings.stateRoot,
    pidNamespace: settings.pidNamespace,
    forkServer: settings.forkServer,
    bwrap: settings.bwrap,
    startTimeoutMs: settings.startTimeoutMs,
  };
}
