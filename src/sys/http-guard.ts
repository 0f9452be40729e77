/**
 * The checks every HTTP request passes before MCP sees it (docs/mcp.md), in this order: its Host is
 * one this server answers to (DNS-rebinding protection: on a loopback address only loopback names,
 * plus those given with --allow-host), its Origin, when it has one, is a loopback origin (any port)
 * or one allowed by --allow-origin, and it carries the bearer token.
 *
 * The SDK's transport has `allowedHosts`, but it compares whole `host:port` strings with terse texts,
 * and only once a session's transport exists; these checks run before any session is made.
 *
 * In sys/ (no import but Node's) because two HTTP servers use it: MCP's (mcp/http.ts) and the view's
 * (view/server.ts), and view/ sits below mcp/ (docs/architecture.md, "Layers").
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** A listening address only this machine can reach: localhost, 127.x.x.x, ::1. */
export function isLoopbackAddress(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost" || h === "::1") return true;
  return isIP(h) === 4 && h.startsWith("127.");
}

/** Which Host headers are served. */
export interface HostRule {
  /** false: any Host (bound to a non-loopback address and no --allow-host given). */
  check: boolean;
  /** Lower-case `name` (any port), `name:port` (that port only) or `*` (any Host). */
  allowed: readonly string[];
}

export function hostRule(bindHost: string, allowHosts: readonly string[]): HostRule {
  const allowed = allowHosts.map((h) => h.trim().toLowerCase()).filter(Boolean);
  return { check: isLoopbackAddress(bindHost) || allowed.length > 0, allowed };
}

const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(\d{1,5}))?$/;

export function hostAllowed(header: string | undefined, rule: HostRule): boolean {
  if (!rule.check || rule.allowed.includes("*")) return true;
  const m = HOST_HEADER.exec(header?.trim().toLowerCase() ?? "");
  if (!m) return false;
  const [whole, name] = m;
  return LOOPBACK.has(name) || rule.allowed.includes(name) || rule.allowed.includes(whole);
}

export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined) return true; // not a browser: nothing to rebind
  if (allowed.includes(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && LOOPBACK.has(url.hostname);
}

export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (!m) return false;
  const given = Buffer.from(m[1]);
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

export interface Guard {
  token: string;
  allowedOrigins: readonly string[];
  hosts: HostRule;
}

/** Why a request is refused, or undefined when it may go on. */
export function refusal(req: IncomingMessage, guard: Guard): Refusal | undefined {
  const host = req.headers.host;
  if (!hostAllowed(host, guard.hosts)) {
    const listed = guard.hosts.allowed.length ? `, ${guard.hosts.allowed.join(", ")}` : "";
    return {
      status: 403,
      message: `Forbidden: ${host === undefined ? "no Host header" : `Host ${host} is not allowed`} (DNS-rebinding protection: this server answers to Host localhost, 127.0.0.1, [::1]${listed}; add a name with --allow-host H or NBAGENT_MCP_ALLOW_HOSTS=H1,H2).`,
    };
  }
  const origin = req.headers.origin;
  if (!originAllowed(origin, guard.allowedOrigins)) {
    return {
      status: 403,
      message: `Forbidden: Origin ${origin} is not allowed (loopback origins are; add others with --allow-origin).`,
    };
  }
  if (!tokenMatches(req.headers.authorization, guard.token)) {
    return {
      status: 401,
      message: req.headers.authorization
        ? "Unauthorized: wrong bearer token."
        : "Unauthorized: send Authorization: Bearer <token> (NBAGENT_MCP_TOKEN, or the token printed at start).",
      headers: { "WWW-Authenticate": 'Bearer realm="nbagent"' },
    };
  }
  return undefined;
}
