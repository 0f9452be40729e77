/**
 * The session limits and Host list of `nbagent mcp --http` (docs/mcp.md): each from its flag, else
 * its environment variable, else the default. Bad values are an Error: text (exit 2).
 */

export const DEFAULT_MAX_SESSIONS = 8;
export const DEFAULT_IDLE_MINUTES = 30;
/** The runtime's own limit of kept kernels (docs/kernel-state.md), stated in the help. */
export const RUNTIME_MAX_KERNELS = 4;
/** setTimeout's reach is about 24 days; a week is plenty. */
const MAX_IDLE_MINUTES = 7 * 24 * 60;

export interface HttpLimitFlags {
  "max-sessions"?: string;
  "max-kernels"?: string;
  "idle-minutes"?: string;
  "allow-host"?: string[];
}

export interface HttpLimits {
  maxSessions: number;
  /** undefined: the runtime's default. */
  maxKernels?: number;
  idleMs: number;
  allowHosts: string[];
}

function pick(flag: string | undefined, flagName: string, envName: string, env: NodeJS.ProcessEnv) {
  if (flag !== undefined) return { text: flag, from: flagName };
  const e = env[envName]?.trim();
  return e ? { text: e, from: envName } : undefined;
}

function whole(flag: string | undefined, flagName: string, envName: string, env: NodeJS.ProcessEnv) {
  const v = pick(flag, flagName, envName, env);
  if (!v) return undefined;
  const n = Number(v.text);
  if (!/^\d+$/.test(v.text.trim()) || n < 1 || n > 10_000)
    throw new Error(`${v.from} must be a whole number from 1 to 10000, not '${v.text}'`);
  return n;
}

/** Throws an Error whose message names the flag or variable and the value it had. */
export function httpLimits(flags: HttpLimitFlags, env: NodeJS.ProcessEnv = process.env): HttpLimits {
  const maxSessions =
    whole(flags["max-sessions"], "--max-sessions", "NBAGENT_MCP_MAX_SESSIONS", env) ?? DEFAULT_MAX_SESSIONS;
  const maxKernels = whole(flags["max-kernels"], "--max-kernels", "NBAGENT_MCP_MAX_KERNELS", env);
  const idle = pick(flags["idle-minutes"], "--idle-minutes", "NBAGENT_MCP_IDLE_MINUTES", env);
  let minutes = DEFAULT_IDLE_MINUTES;
  if (idle) {
    minutes = Number(idle.text);
    if (idle.text.trim() === "" || !Number.isFinite(minutes) || minutes < 0 || minutes > MAX_IDLE_MINUTES)
      throw new Error(
        `${idle.from} must be a number of minutes from 0 (never close) to ${MAX_IDLE_MINUTES} (a week), not '${idle.text}'`,
      );
  }
  const allowHosts = [...(flags["allow-host"] ?? []), ...(env.NBAGENT_MCP_ALLOW_HOSTS ?? "").split(",")]
    .map((h) => h.trim())
    .filter(Boolean);
  for (const h of allowHosts)
    if (h !== "*" && !/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?$/.test(h))
      throw new Error(
        `--allow-host / NBAGENT_MCP_ALLOW_HOSTS: '${h}' is not a host name, host:port, [IPv6]:port or *`,
      );
  return { maxSessions, maxKernels, idleMs: Math.round(minutes * 60_000), allowHosts };
}
