/** The texts of the HTTP server's session limits (docs/mcp.md): refusals and operator lines. */
import { plural } from "../sys/units.js";

/** "30 minutes", "1.5 minutes", "0.6 seconds". */
export function span(ms: number): string {
  if (ms >= 60_000) return plural(Math.round((ms / 60_000) * 100) / 100, "minute");
  return plural(Math.round(ms / 100) / 10, "second");
}

function clock(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

export function sessionCapText(maxSessions: number, idleMs: number): string {
  const idle = idleMs > 0 ? ` A session without requests for ${span(idleMs)} is closed by itself.` : "";
  return (
    `Too many MCP sessions: this server keeps at most ${maxSessions} open at once and all are in use. ` +
    `Close one (HTTP DELETE with its Mcp-Session-Id) or raise the cap: --max-sessions N or NBAGENT_MCP_MAX_SESSIONS=N.${idle}`
  );
}

export function idleClosedText(id: string, at: number, idleMs: number): string {
  return (
    `Session not found: session ${id} was closed at ${clock(at)} UTC after ${span(idleMs)} without requests ` +
    "(--idle-minutes, NBAGENT_MCP_IDLE_MINUTES) and its kernels were shut down: their variables are gone. " +
    "Start a new session (initialize)."
  );
}

export const UNKNOWN_SESSION_TEXT = "Session not found: start a new session (initialize).";
