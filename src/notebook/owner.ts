/**
 * Who wrote a lock or temp file, and whether that process is still there: pid, host and (on Linux)
 * the process's start time, so that a pid reused by an unrelated process, or a killed process not
 * yet reaped (a zombie), does not count as the owner still running. Rules: docs/notebook-tool.md
 * ("Files").
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** The part after the command name in /proc/<pid>/stat: state is field 3, start time field 22. */
function procStat(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "latin1");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

let selfStart: string | undefined | null = null;

/** This process's start time (clock ticks since boot, as a string), undefined without /proc. */
export function ownStartTime(): string | undefined {
  if (selfStart === null) selfStart = procStat(process.pid)?.[19];
  return selfStart;
}

export const HOST = hostname();

/**
 * Whether process `pid` of this host is running. With `start` (from ownStartTime() of that
 * process) a different start time means the pid now belongs to another process: dead.
 */
export function processAlive(pid: number, start?: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const fields = procStat(pid);
  if (!fields) return true; // no /proc (or it vanished this instant): trust kill(0)
  if (fields[0] === "Z" || fields[0] === "X") return false;
  if (start !== undefined && fields[19] !== start) return false;
  return true;
}
