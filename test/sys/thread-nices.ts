/** The nice value of each thread of a process, as Linux keeps them (/proc/<pid>/task/<tid>/stat). */
import { readdirSync, readFileSync } from "node:fs";
import { parseProcStat } from "../../src/sys/proc.js";

/** Thread id → nice value; threads that end while read are left out. */
export function threadNices(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = parseProcStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1"));
      if (stat) out.set(Number(tid), stat.nice);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}
