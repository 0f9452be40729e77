/**
 * The checks every HTTP request passes before MCP sees it (docs/mcp.md): its Origin, when it has one,
 * is a loopback origin (any port) or one allowed by --allow-origin (DNS-rebinding protection), and
 * it carries the bearer token.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

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

/** Why a request is refused, or undefined when it may go on. */
export function refusal(
  req: IncomingMessage,
  token: string,
  allowedOrigins: readonly string[],
): Refusal | undefined {
  const origin = req.headers.origin;
  if (!originAllowed(origin, allowedOrigins)) {
    return {
      status: 403,
      message: `Forbidden: Origin ${origin} is not allowed (loopback origins are; add others with --allow-origin).`,
    };
  }
  if (!tokenMatches(req.headers.authorization, token)) {
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
