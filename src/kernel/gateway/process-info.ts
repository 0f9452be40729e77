/** What /proc says about a process: alive (not a zombie), when it started, its command line. */
import { readFileSync } from "node:fs";

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** True while a process with this pid exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const fields = statFields(pid);
  return fields === undefined || fields[0] !== "Z";
}

/** The process's start time in clock ticks since boot (field 22), undefined where /proc is unreadable. */
export function processStartTicks(pid: number): number | undefined {
  const fields = statFields(pid);
  const ticks = fields ? Number(fields[19]) : Number.NaN;
  return Number.isFinite(ticks) ? ticks : undefined;
}

/** The process's arguments, undefined where /proc is unreadable. */
export function processArgs(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined;
  }
}
