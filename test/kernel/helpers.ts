import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import type { ConnectedKernel, ExecuteResult } from "../../src/kernel/index.js";

/** True while a process with this pid exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Live (non-zombie) processes matching a test on [state, ppid, pgrp] from /proc/<pid>/stat. */
function processes(match: (ppid: number, pgrp: number) => boolean): number[] {
  const out: number[] = [];
  for (const name of readdirSafe("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z" && match(Number(fields[1]), Number(fields[2]))) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/** Pids whose process group is `pgid`. */
export function groupMembers(pgid: number): number[] {
  return processes((_ppid, pgrp) => pgrp === pgid);
}

/** Pids whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  return processes((ppid) => ppid === pid);
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Polls `condition` until true or the deadline passes; returns whether it became true. */
export async function waitUntil(condition: () => boolean, timeoutMs: number, stepMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return condition();
}

/** Live processes whose command line contains `text` (e.g. a connection-file directory). */
export function processesMentioning(text: string): number[] {
  const out: number[] = [];
  for (const name of readdirSafe("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(text) && pidAlive(Number(name)))
        out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/**
 * Runs a cell that prints, then kills its own kernel with os._exit(1); asserts the execution ended
 * (found by the process exit or the heartbeat, not by a timeout) and reported the death. Returns the result for further checks.
 */
export async function exitMidExecution(kernel: ConnectedKernel): Promise<ExecuteResult> {
  const r = await kernel.execute("import os, time\nprint('bye', flush=True)\ntime.sleep(0.2)\nos._exit(1)");
  assert.equal(r.kernelDied, true);
  assert.equal(kernel.isAlive(), false);
  return r;
}
