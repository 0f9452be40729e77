/**
 * This process's scheduling priority, lowered for a process that only watches (`nbagent view`,
 * docs/view.md "Cost"): on a machine whose cores the kernels and the hosts keep busy, it takes what
 * they leave. Linux keeps a nice value per thread, so every thread of the process is lowered (the
 * ones started later inherit it from the thread that starts them); elsewhere the process's own.
 * Never raises a priority (a process already nicer stays so: raising needs privileges anyway).
 */
import { readdirSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/** What lowering did: the nice value the process's threads run at now, and how many it could not set. */
export interface LoweredPriority {
  nice: number;
  threads: number;
  failed: number;
}

/** Sets every thread of this process to at least `nice` (0 normal … 19 lowest). */
export function lowerOwnPriority(nice: number): LoweredPriority {
  const ids = threadIds();
  let failed = 0;
  for (const id of ids) {
    try {
      if (getPriority(id) < nice) setPriority(id, nice);
    } catch {
      failed++; // the thread ended meanwhile, or the system refuses
    }
  }
  return { nice: safeGet(0) ?? nice, threads: ids.length, failed };
}

/** The process's threads (Linux: /proc/self/task); elsewhere 0, the process itself. */
function threadIds(): number[] {
  try {
    return readdirSync("/proc/self/task").map(Number);
  } catch {
    return [0];
  }
}

function safeGet(id: number): number | undefined {
  try {
    return getPriority(id);
  } catch {
    return undefined;
  }
}
