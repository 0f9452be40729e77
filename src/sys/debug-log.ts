/**
 * The debug log (docs/reliability.md, "The debug log"): with NBAGENT_LOG=FILE, every kernel's
 * lifecycle — a start asked for and each attempt, the process launched or forked (with the fork
 * server's request and reply), its first answer, restarts, deaths, shutdowns — is appended to FILE as
 * one JSON line per event, with the host process's id (`host`) and the milliseconds since it started,
 * so a start that stalls is read from the log instead of guessed. Off by default: then `debugLog` is
 * one comparison. The kernel provider configures it once from the settings.
 *
 * FILE may sit where a kernel writes (a project folder): it is opened once, by descriptor, with
 * O_NOFOLLOW|O_NONBLOCK, and used only when it is a regular file of this user — a link or a FIFO a
 * kernel planted there turns the log off instead of being followed or blocking the host. Later
 * events go to that same file whatever is put at the path afterwards.
 */
import { closeSync, constants, fstatSync, openSync, writeSync } from "node:fs";

const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;

let target: string | undefined;
let fd: number | undefined;

/** Turns the log on (a file path) or off (undefined). */
export function configureDebugLog(file: string | undefined): void {
  if (file === target) return;
  if (fd !== undefined) closeSync(fd);
  fd = undefined;
  target = file;
}

/** The log's descriptor, opened on first use; undefined (and the log off) when FILE is no file of ours. */
function descriptor(path: string): number | undefined {
  if (fd !== undefined) return fd;
  try {
    const opened = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
    const st = fstatSync(opened);
    if (st.isFile() && (process.getuid === undefined || st.uid === process.getuid())) {
      fd = opened;
      return fd;
    }
    closeSync(opened);
  } catch {
    // a link (ELOOP), a missing folder, no permission
  }
  target = undefined;
  return undefined;
}

/** Appends one event; a log that cannot be written never fails the work it describes. */
export function debugLog(event: string, fields: Record<string, unknown> = {}): void {
  if (target === undefined) return;
  const out = descriptor(target);
  if (out === undefined) return;
  const line = JSON.stringify({
    at: new Date().toISOString(),
    ms: Math.round(performance.now()),
    host: process.pid,
    event,
    ...fields,
  });
  try {
    writeSync(out, `${line}\n`);
  } catch {
    // the log is for diagnosis only
  }
}
