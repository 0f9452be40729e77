/**
 * The debug log (docs/reliability.md, "The debug log"): with NBAGENT_LOG=FILE, every kernel's
 * lifecycle — a start asked for and each attempt, the process launched or forked (with the fork
 * server's request and reply), its first answer, restarts, deaths, shutdowns — is appended to FILE as
 * one JSON line per event, with the host process's id (`host`) and the milliseconds since it started, so a
 * start that stalls is read from the log instead of guessed. Off by default: then `debugLog` is one
 * comparison. The edges configure it once from the settings (cli/dispatch.ts, the pi extension).
 */
import { appendFileSync } from "node:fs";

let target: string | undefined;

/** Turns the log on (a file path) or off (undefined). */
export function configureDebugLog(file: string | undefined): void {
  target = file;
}

/** Appends one event; a log that cannot be written never fails the work it describes. */
export function debugLog(event: string, fields: Record<string, unknown> = {}): void {
  if (target === undefined) return;
  const line = JSON.stringify({
    at: new Date().toISOString(),
    ms: Math.round(performance.now()),
    host: process.pid,
    event,
    ...fields,
  });
  try {
    appendFileSync(target, `${line}\n`);
  } catch {
    // the log is for diagnosis only
  }
}
