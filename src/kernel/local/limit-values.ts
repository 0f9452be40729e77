/**
 * Per-kernel resource limits as values (docs/isolation.md, "Limits"): the defaults, and the user's
 * values (flags and environment) turned into a `KernelLimits`. Apart from limits.ts, which reads
 * what a limit did to a kernel, so resolving settings loads no process code.
 */
import { totalmem } from "node:os";
import type { KernelLimits } from "../types.js";

/**
 * Default for the most processes and threads alive at once in one kernel: far below what takes a
 * host down (a fork bomb stops there), far above what a kernel needs (ipykernel runs ~10 threads,
 * numpy one OpenBLAS thread per core, a process pool one process per core).
 */
export const DEFAULT_MAX_PROCESSES = 1024;
/** No memory limit unless asked: how much memory a kernel may take depends on the machine and the work. */
export const DEFAULT_MEMORY_BYTES = 0;
/** Below these a Python kernel cannot even start (ipykernel alone: ~60 MB, ~10 threads). */
export const MIN_MEMORY_BYTES = 64 * 1024 * 1024;
export const MIN_MAX_PROCESSES = 16;
/** No CPU limit unless asked: a kernel may use every core, as any program the user runs. */
export const DEFAULT_CPUS = 0;
/** The least CPU share a cgroup gives: a 1 ms quota per 100 ms period. */
export const MIN_CPUS = 0.01;
/**
 * Open files per process of a kernel (RLIMIT_NOFILE, soft and hard; limits.py _LIM_OPEN_FILES):
 * ipykernel and ZeroMQ hold a few dozen, data work may open hundreds; four times the usual soft
 * default of 1024, far below the 20,000+ a host may hand down.
 */
export const OPEN_FILES = 4096;

const MiB = 2 ** 20;

/**
 * The size of a kernel's tmpfs mounts (its /dev/shm, and $TMPDIR under --sandbox; limits.py
 * default_tmpfs_bytes answers the same): half the memory limit — tmpfs pages count in it, and half
 * leaves the kernel room, so a full /tmp is a "No space left on device" while the kernel lives on —
 * else an eighth of the machine's RAM: tmpfs pages belong to no process, so the out-of-memory killer
 * cannot free them by ending one, and the default of half the RAM each would let a kernel pin it all.
 */
export function tmpfsBytes(memoryBytes: number, ramBytes = totalmem()): number {
  if (memoryBytes) return Math.max(MiB, Math.floor(memoryBytes / 2 / MiB) * MiB);
  return Math.max(64 * MiB, Math.floor(ramBytes / 8 / MiB) * MiB);
}

const UNITS: Record<string, number> = { "": 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };
const OFF = new Set(["0", "off", "none", "unlimited"]);

/**
 * A memory size as the user writes it: "2G", "512M", "1.5GiB", "800mb", "1073741824" (bytes); units
 * are powers of 1024. "0", "off", "none", "unlimited": no limit (0). Throws an Error naming `what` (tools/ words it for the user).
 */
export function parseMemoryLimit(text: string, what = "--memory-limit"): number {
  const t = text.trim().toLowerCase();
  if (OFF.has(t)) return 0;
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/.exec(t);
  const bytes = m ? Math.floor(Number(m[1]) * UNITS[m[2]]) : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0)
    throw new Error(`${what} must be a size like 2G, 512M or 1073741824 (bytes), or off; got "${text}"`);
  if (bytes < MIN_MEMORY_BYTES)
    throw new Error(
      `${what} ${text} is too small: a Python kernel needs more than that to start; give at least 64M (or off)`,
    );
  return bytes;
}

/** A process count: a whole number ≥ 16, or "0", "off", "none", "unlimited" for no limit (0). */
export function parseMaxProcesses(text: string, what = "--max-processes"): number {
  const t = text.trim().toLowerCase();
  if (OFF.has(t)) return 0;
  const n = /^\d+$/.test(t) ? Number(t) : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new Error(`${what} must be a whole number of processes like 256, or off; got "${text}"`);
  if (n < MIN_MAX_PROCESSES)
    throw new Error(
      `${what} ${text} is too small: a Python kernel runs about 10 threads (each counts); give at least ${MIN_MAX_PROCESSES} (or off)`,
    );
  return n;
}

/**
 * A CPU limit: how many CPUs' worth of time the kernel and its children may use, like "1.5" or "2"
 * (at least 0.01); "0", "off", "none", "unlimited" for no limit (0).
 */
export function parseCpus(text: string, what = "--cpus"): number {
  const t = text.trim().toLowerCase();
  if (OFF.has(t)) return 0;
  const n = /^(\d+(\.\d*)?|\.\d+)$/.test(t) ? Number(t) : Number.NaN;
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`${what} must be a number of CPUs like 1.5 or 2, or off; got "${text}"`);
  if (n < MIN_CPUS)
    throw new Error(
      `${what} ${text} is too small: a cgroup gives at least ${MIN_CPUS} CPUs (1 ms in every 100 ms); give at least ${MIN_CPUS} (or off)`,
    );
  return n;
}

/**
 * The limits for kernels from the user's settings: a flag's value wins over the environment
 * (NBAGENT_MAX_PROCESSES, NBAGENT_MEMORY_LIMIT, NBAGENT_CPUS), which wins over the defaults. Every
 * field is set in the answer; 0 means no limit. Throws an Error for a bad value.
 */
export function resolveLimits(
  flags: { maxProcesses?: string; memoryLimit?: string; cpus?: string },
  env: Readonly<Record<string, string | undefined>>,
): Required<KernelLimits> {
  const procs = flags.maxProcesses ?? nonEmpty(env.NBAGENT_MAX_PROCESSES);
  const memory = flags.memoryLimit ?? nonEmpty(env.NBAGENT_MEMORY_LIMIT);
  const cpus = flags.cpus ?? nonEmpty(env.NBAGENT_CPUS);
  return {
    maxProcesses:
      procs === undefined
        ? DEFAULT_MAX_PROCESSES
        : parseMaxProcesses(
            procs,
            flags.maxProcesses !== undefined ? "--max-processes" : "NBAGENT_MAX_PROCESSES",
          ),
    memoryBytes:
      memory === undefined
        ? DEFAULT_MEMORY_BYTES
        : parseMemoryLimit(
            memory,
            flags.memoryLimit !== undefined ? "--memory-limit" : "NBAGENT_MEMORY_LIMIT",
          ),
    cpus:
      cpus === undefined
        ? DEFAULT_CPUS
        : parseCpus(cpus, flags.cpus !== undefined ? "--cpus" : "NBAGENT_CPUS"),
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v?.trim() ? v : undefined;
}

/** A KernelLimits with the defaults filled in (what the launcher hands to apply_limits). */
export function withDefaults(limits: KernelLimits | undefined): Required<KernelLimits> {
  return {
    maxProcesses: limits?.maxProcesses ?? DEFAULT_MAX_PROCESSES,
    memoryBytes: limits?.memoryBytes ?? DEFAULT_MEMORY_BYTES,
    cpus: limits?.cpus ?? DEFAULT_CPUS,
  };
}

/** What a kernel's init hands to apply_limits: the limits, the open-files limit and the tmpfs size. */
export interface InitLimits extends Required<KernelLimits> {
  openFiles: number;
  tmpfsBytes: number;
}

export function initLimits(limits: KernelLimits | undefined): InitLimits {
  const all = withDefaults(limits);
  return { ...all, openFiles: OPEN_FILES, tmpfsBytes: tmpfsBytes(all.memoryBytes) };
}
