/**
 * Per-kernel resource limits, the host's side (docs/isolation.md, "Limits"): once a kernel has ended,
 * whether a limit ended it, and the removal of its cgroups (limit-values.ts turns the user's values
 * into a `KernelLimits`). The limits themselves are applied inside
 * the kernel's namespace by limits.py (`apply_limits`), which answers with an `AppliedLimits`.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, readSync, rmdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { assetPath } from "../../assets.js";
import type { KernelLimitHit, KernelLimits } from "../types.js";
import { initLimits } from "./limit-values.js";

/** What limits.py's apply_limits answered (in the kernel's pid 1, before the kernel started). */
export interface AppliedLimits {
  /** The limits in force; null: none. */
  maxProcesses: number | null;
  memoryBytes: number | null;
  /** CPUs' worth of time per period (cgroup cpu.max / cpu.cfs_quota_us); null: none. */
  cpus: number | null;
  /** RLIMIT_NOFILE of every process of the kernel (soft and hard); null when it could not be set. */
  openFiles: number | null;
  /** The size of the kernel's /dev/shm (and, under --sandbox, of its $TMPDIR); null from an older init. */
  tmpfsBytes: number | null;
  /** How the process, memory and CPU limits are applied. */
  via: LimitMechanism | "mixed" | "none";
  processesVia: LimitMechanism | null;
  memoryVia: LimitMechanism | null;
  /** Never "rlimit": RLIMIT_CPU counts total seconds, not a rate. */
  cpusVia: Exclude<LimitMechanism, "rlimit"> | null;
  /** The cgroups made for this kernel (to read after its death, then remove). */
  cgroups: { pids?: string; memory?: string; cpu?: string };
  cgroup: string | null;
  /** Why a limit asked for is weaker than asked, or missing. */
  reason?: string;
  /** The CPU limit's part of `reason` (there is no CPU limit without a cpu cgroup). */
  cpusReason?: string;
}

export type LimitMechanism = "cgroup-v2" | "cgroup-v1" | "rlimit";

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** `key value` lines (memory.events, pids.events, memory.oom_control) → key: number. */
function keyed(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (text ?? "").split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out[k] = Number(v);
  }
  return out;
}

/**
 * Whether a limit ended (or hampered) the kernel, from its cgroups; call after it ended and before
 * removeLimitCgroups. A memory limit: the out-of-memory killer killed a process of the kernel's
 * group (cgroup v1 memory.oom_control oom_kill, v2 memory.events oom_kill). A process limit: starts
 * of processes or threads were refused (pids.events max). Undefined when neither, or when the limits
 * were rlimits (the kernel got MemoryError or EAGAIN instead of dying, and its output says so).
 */
export function readLimitHit(applied: AppliedLimits | undefined): KernelLimitHit | undefined {
  if (!applied) return undefined;
  const mem = applied.cgroups.memory;
  if (mem && applied.memoryBytes) {
    const v2 = keyed(readText(`${mem}/memory.events`));
    const v1 = keyed(readText(`${mem}/memory.oom_control`));
    const kills = (v2.oom_kill ?? 0) + (v1.oom_kill ?? 0);
    if (kills > 0) return { kind: "memory-limit", limitBytes: applied.memoryBytes, oomKills: kills };
  }
  const starts = readProcessRefusals(applied);
  return starts && starts.refused > 0 ? { kind: "process-limit", ...starts } : undefined;
}

/** The process limit in force by cgroup and how many starts it has refused so far, else undefined. */
export function readProcessRefusals(
  applied: AppliedLimits | undefined,
): { maxProcesses: number; refused: number } | undefined {
  const pids = applied?.cgroups.pids;
  if (!pids || !applied.maxProcesses) return undefined;
  return { maxProcesses: applied.maxProcesses, refused: keyed(readText(`${pids}/pids.events`)).max ?? 0 };
}

/**
 * readProcessRefusals through one descriptor, kept open: a cgroup file is generated anew by every
 * read from offset 0, so the two reads of each execution (connected-kernel.ts) cost one `pread`
 * each instead of an open, two reads and a close. Answers as readProcessRefusals does; `close()`
 * when the kernel is cleaned up (an open descriptor does not keep its group from being removed).
 */
export class ProcessRefusalReader {
  private fd?: number;
  private path?: string;
  private readonly buf = Buffer.alloc(4096);

  read(applied: AppliedLimits | undefined): { maxProcesses: number; refused: number } | undefined {
    const pids = applied?.cgroups.pids;
    if (!pids || !applied.maxProcesses) return undefined;
    return { maxProcesses: applied.maxProcesses, refused: keyed(this.text(`${pids}/pids.events`)).max ?? 0 };
  }

  close(): void {
    const fd = this.fd;
    this.fd = undefined;
    this.path = undefined;
    if (fd !== undefined)
      try {
        closeSync(fd);
      } catch {
        /* closed already */
      }
  }

  private text(path: string): string | undefined {
    if (this.path !== path) {
      this.close();
      try {
        this.fd = openSync(path, "r");
        this.path = path;
      } catch {
        return undefined;
      }
    }
    try {
      const n = readSync(this.fd as number, this.buf, 0, this.buf.length, 0);
      if (n < this.buf.length) return this.buf.toString("utf8", 0, n);
    } catch {
      /* the group is gone (ENODEV): read by path, as readProcessRefusals does */
    }
    this.close();
    return readText(path);
  }
}

/**
 * The memory charged to the kernel's own memory cgroup now (v2 memory.current, v1
 * memory.usage_in_bytes), in bytes; undefined when it has none (no memory limit by cgroup).
 */
export function readMemoryCurrent(applied: AppliedLimits | undefined): number | undefined {
  const mem = applied?.cgroups.memory;
  if (!mem) return undefined;
  const text = readText(`${mem}/memory.current`) ?? readText(`${mem}/memory.usage_in_bytes`);
  const bytes = text === undefined ? Number.NaN : Number(text.trim());
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

/**
 * Removes a kernel's cgroups once it and everything it started have ended (only groups named
 * nbagent-…). Never throws: answers the directories that could not be removed, with why.
 */
export function removeLimitCgroups(applied: AppliedLimits | undefined): { path: string; error: string }[] {
  const failed: { path: string; error: string }[] = [];
  for (const path of new Set(Object.values(applied?.cgroups ?? {}))) {
    if (!path || !basename(path).startsWith("nbagent-")) continue;
    try {
      rmdirSync(path);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code !== "ENOENT") failed.push({ path, error: e.code ?? e.message });
    }
  }
  return failed;
}

/** How long cleanup waits for a kernel's groups to empty (they do within milliseconds). */
const EMPTY_WAIT_MS = 2_000;
const EMPTY_POLL_MS = 25;

/**
 * Removes the groups once the kernel has ended, waiting while one is busy: the kernel's last tasks
 * leave its groups a moment after its init has exited (the kernel tears the namespace down after
 * that exit is reported), so a first rmdir can fail with EBUSY, more often on a loaded machine —
 * nothing announces the moment, hence the short polls, for up to EMPTY_WAIT_MS.
 */
export async function removeLimitCgroupsWhenEmpty(
  applied: AppliedLimits | undefined,
): Promise<{ path: string; error: string }[]> {
  const until = performance.now() + EMPTY_WAIT_MS;
  for (;;) {
    const failed = removeLimitCgroups(applied);
    if (!failed.some((f) => f.error === "EBUSY") || performance.now() >= until) {
      removeOrphanGroups(applied);
      return failed;
    }
    await sleep(EMPTY_POLL_MS);
  }
}

/** A kernel's group name: `nbagent-kernel-<host pid>-<uuid>` (the connection file's name, limits.py). */
const KERNEL_GROUP = /^nbagent-kernel-(\d+)-/;

/**
 * Removes the empty kernel groups beside this kernel's whose host process has ended: a cleanup that
 * gave up while a group was still busy (a loaded machine), or a host that was killed. rmdir removes
 * only an empty group, so a group with a process in it stays whoever made it; a live host's groups
 * are never touched (its pid is checked first). Answers the groups removed.
 */
export function removeOrphanGroups(applied: AppliedLimits | undefined): string[] {
  const removed: string[] = [];
  const parents = new Set(
    Object.values(applied?.cgroups ?? {})
      .filter((p) => p && basename(p).startsWith("nbagent-"))
      .map((p) => dirname(p)),
  );
  for (const parent of parents) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      const pid = Number(KERNEL_GROUP.exec(name)?.[1]);
      if (!pid || pid === process.pid || hostAlive(pid)) continue;
      try {
        rmdirSync(join(parent, name));
        removed.push(join(parent, name));
      } catch {
        // not empty (its processes still run), or gone already
      }
    }
  }
  return removed;
}

/** Whether a process with this pid exists (EPERM: it does, another user's). */
function hostAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * Python for the doctor's probe: a child applies the limits as a kernel's init would, reports, and
 * exits; the parent removes the groups it made and prints the report as one JSON line.
 */
function probeSource(): string {
  return `${readFileSync(assetPath("kernel/local/limits.py"), "utf8")}
import json
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    info = apply_limits(json.loads(sys.argv[1]), "doctor-%d" % os.getppid())
    os.write(w, json.dumps(info).encode())
    os._exit(0)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
info = json.loads(data.decode())
remove_limit_cgroups(info)
print(json.dumps(info), flush=True)
`;
}

/**
 * What a kernel started now would get for `limits` (the doctor's probe: the limits, with the
 * open-files limit and the tmpfs size, are applied in a throwaway process, whose groups are
 * removed). Never throws: a probe that cannot run answers via "none" with the reason.
 */
export function probeLimits(python: string, limits: KernelLimits): Promise<AppliedLimits> {
  const none = (reason: string): AppliedLimits => ({
    maxProcesses: null,
    memoryBytes: null,
    cpus: null,
    openFiles: null,
    tmpfsBytes: null,
    via: "none",
    processesVia: null,
    memoryVia: null,
    cpusVia: null,
    cgroups: {},
    cgroup: null,
    reason,
  });
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    const child = spawn(python, ["-c", probeSource(), JSON.stringify(initLimits(limits))], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.once("error", (e) => resolve(none(`cannot run ${python}: ${e.message}`)));
    child.once("close", (code) => {
      try {
        resolve(JSON.parse(out.trim().split("\n").pop() ?? "") as AppliedLimits);
      } catch {
        resolve(none(`the probe failed: ${err.trim().split("\n").pop() || `exit code ${code}`}`));
      }
    });
  });
}
