/**
 * Processes of this host: whether one is still running, and what /proc/<pid>/stat says about it
 * (state, CPU time, start time). A pid alone does not identify a process for long: pids are reused,
 * and a killed process lingers as a zombie until reaped. A process's start time (clock ticks since
 * boot) does not change while it lives, so pid + start time names one process for good.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** The fields of /proc/<pid>/stat that nbagent reads (field numbers as in proc(5)). */
export interface ProcStat {
  /** Field 2, without its parentheses: the command name (may hold spaces and parentheses). */
  comm: string;
  /** Field 3: R, S, D, Z (zombie), X (dead), … */
  state: string;
  /** Field 4: the parent's pid. */
  ppid: number;
  /** Fields 14 and 15: user and system CPU time in clock ticks. */
  utimeTicks: number;
  stimeTicks: number;
  /** Field 19: the nice value (-20 … 19; Linux keeps one per thread: a task's own). */
  nice: number;
  /** Field 22: the start time in clock ticks since boot, kept as its decimal text (exact). */
  startTime: string;
}

/**
 * Parses the text of /proc/<pid>/stat. The command name may hold spaces and parentheses, so the
 * fields after it are split after its LAST ')'. Undefined for text that is not such a line.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const fields = text
    .slice(close + 2)
    .trim()
    .split(" ");
  if (fields.length < 20) return undefined;
  const startTime = fields[19];
  if (!/^\d+$/.test(startTime)) return undefined;
  return {
    comm: text.slice(open + 1, close),
    state: fields[0],
    ppid: Number(fields[1]),
    utimeTicks: Number(fields[11]),
    stimeTicks: Number(fields[12]),
    nice: Number(fields[16]),
    startTime,
  };
}

/** /proc/<pid>/stat of a process, undefined where it is unreadable (gone, or no /proc). */
export function readProcStat(pid: number): ProcStat | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return undefined;
  }
}

/** The process's arguments, undefined where /proc is unreadable. */
export function processArgs(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined;
  }
}

let selfStart: string | undefined | null = null;

/** This process's start time (see ProcStat.startTime), undefined without /proc. */
export function ownStartTime(): string | undefined {
  if (selfStart === null) selfStart = readProcStat(process.pid)?.startTime;
  return selfStart;
}

/** This host's name, as written into lock owners. */
export const HOST = hostname();

/**
 * Whether process `pid` of this host is running: it exists (kill(0), EPERM counts: it is another
 * user's) and is not a zombie. With `start` (ownStartTime() of that process, or ProcStat.startTime)
 * a different start time means the pid now belongs to another process: dead.
 */
export function processAlive(pid: number, start?: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = readProcStat(pid);
  if (!stat) return true; // no /proc (or it vanished this instant): trust kill(0)
  if (stat.state === "Z" || stat.state === "X") return false;
  if (start !== undefined && stat.startTime !== start) return false;
  return true;
}
