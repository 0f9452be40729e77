/**
 * Starts one local kernel process: connection file, sockets connected first, then the kernel spawned
 * through the watchdog wrapper in its own process group (detached), env given at spawn, stdout/stderr
 * drained into a small tail buffer (a full pipe would block the kernel). Kills by process group.
 * The wrapper puts the kernel in a PID namespace of its own where it can, under bubblewrap when a
 * sandbox is asked for, and says what it achieved (docs/isolation.md).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { readProcStat } from "../../sys/proc.js";
import { within } from "../../sys/wait.js";
import { KernelStartError } from "../errors.js";
import { MessageFactory } from "../messages.js";
import type { LaunchedKernel } from "../provisioner.js";
import type {
  KernelConfinement,
  KernelIsolation,
  KernelLimitHit,
  KernelLimits,
  KernelSandbox,
} from "../types.js";
import type { ConnectionInfo } from "../zmq/connection.js";
import { type HeartbeatOptions, ZmqTransport } from "../zmq/transport.js";
import { findBwrap, NO_BWRAP } from "./bwrap.js";
import { confineSpec } from "./confine.js";
import {
  createConnectionInfo,
  defaultRuntimeDir,
  newConnectionPath,
  newIpcPrefix,
  removeConnectionFile,
  speaksIpc,
  writeConnectionFile,
} from "./connection-file.js";
import type { KernelSpec } from "./kernelspec.js";
import {
  type AppliedLimits,
  ProcessRefusalReader,
  readLimitHit,
  readMemoryCurrent,
  removeLimitCgroupsWhenEmpty,
} from "./limits.js";
import { bwrapArgs, bwrapSizesTmpfs, writablePaths } from "./sandbox.js";
import { parseIsolationLine, watchdogSource } from "./watchdog.js";

export interface LaunchOptions {
  cwd?: string;
  /** Full environment of the kernel (the caller filters secrets); default none. */
  env?: Record<string, string>;
  heartbeat?: HeartbeatOptions;
  /** Directory for the connection file (default: the per-user state directory's `kernels`). */
  runtimeDir?: string;
  /** Run under bubblewrap (docs/isolation.md); the launch fails with an Error: without bwrap. */
  sandbox?: KernelSandbox;
  /** A PID namespace of its own (default true; the settings turn it off with NBAGENT_PIDNS=0). */
  pidNamespace?: boolean;
  /** The bubblewrap executable for the sandbox (default: looked for in /usr/bin, /bin). */
  bwrap?: string;
  /** What of nbagent's state the kernel may see (default: the state directory hidden). */
  confinement?: KernelConfinement;
  /** Per-kernel resource limits. */
  limits?: KernelLimits;
}

/** Whether kernels get a PID namespace: the option, else yes. */
export function wantsPidNamespace(options: { pidNamespace?: boolean }): boolean {
  return options.pidNamespace ?? true;
}

/** The process `depth` first-children below `pid` (the kernel below its relay and init). */
export function descendant(pid: number | undefined, depth: number): number | undefined {
  let at = pid;
  for (let i = 0; i < depth && at !== undefined; i++) at = firstChild(at);
  return at;
}

/** Whether `pid` (above 1) has `ancestor` among its nearest three ancestors, by /proc. */
export function below(pid: number, ancestor: number | undefined): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 1 || ancestor === undefined) return false;
  let at: number | undefined = pid;
  for (let i = 0; i < 3 && at !== undefined && at > 1; i++) {
    at = readProcStat(at)?.ppid;
    if (at === ancestor) return true;
  }
  return false;
}

/** The first child of `pid` (the kernel under its init), read from /proc; undefined if none. */
export function firstChild(pid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(" ")[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

const STDERR_TAIL = 16 * 1024;
/** Process groups of kernels still running, killed synchronously if the host exits normally. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const pgid of liveGroups) killGroup(pgid, "SIGKILL");
  });
}

/** User + system CPU time of a local process from /proc (Linux), or undefined when unreadable. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  const stat = readProcStat(pid);
  // Clock ticks, 100 per second.
  return stat ? (stat.utimeTicks + stat.stimeTicks) * 10 : undefined;
}

/**
 * Resident memory (VmRSS) of `pid` and every process below it, summed, from /proc (Linux); undefined
 * when `pid` cannot be read. Pages shared between them are counted once per process.
 */
export function processTreeRssBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  let total: number | undefined;
  const seen = new Set<number>();
  const stack = [pid];
  while (stack.length > 0 && seen.size < 4096) {
    const at = stack.pop()!;
    if (seen.has(at)) continue;
    seen.add(at);
    const rss = vmRssBytes(at);
    if (rss === undefined) continue;
    total = (total ?? 0) + rss;
    stack.push(...childrenOf(at));
  }
  return total;
}

function vmRssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The children of every thread of `pid`, from /proc; none when unreadable. */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) => {
      try {
        const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
        return text ? text.split(" ").map(Number) : [];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/** Interrupt by message (kernelspec interrupt_mode "message"): interrupt_request on control. */
export async function sendInterruptRequest(transport: ZmqTransport): Promise<void> {
  transport.send("control", new MessageFactory().interruptRequest());
}

export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** What stopGroups stops: the process groups a kernel runs in, whether it runs, and its exit. */
export interface GroupsToStop {
  groups(): number[];
  isRunning(): boolean;
  exited: Promise<unknown>;
}

/**
 * SIGTERM to every group and up to graceMs for the exit (none when graceMs is 0), then SIGKILL to
 * what still runs and up to 2 s more. An isolated kernel's init (pid 1 of its namespace) passes
 * SIGTERM on to the kernel.
 */
export async function stopGroups(target: GroupsToStop, graceMs: number): Promise<void> {
  if (
    graceMs > 0 &&
    target
      .groups()
      .map((p) => killGroup(p, "SIGTERM"))
      .some(Boolean)
  ) {
    await within(target.exited, graceMs);
  }
  if (target.isRunning()) for (const p of target.groups()) killGroup(p, "SIGKILL");
  await within(target.exited, 2000);
}

/** The descriptor the wrapper reads its confinement from (JSON, to end of input): not argv, which
 * every user's `ps` shows. */
const CONFINE_FD = 3;
/** The descriptor bubblewrap reads its options from (`--args`, NUL-separated). */
const BWRAP_ARGS_FD = 4;

function wrapperArgs(spec: KernelSpec, argv: string[], pidns: boolean): { command: string; args: string[] } {
  const flags = [`--confine-fd=${CONFINE_FD}`, pidns ? "--pidns" : "--no-pidns"];
  if (/^python[0-9.]*$/.test(basename(argv[0]))) {
    return { command: argv[0], args: ["-c", watchdogSource(), ...flags, ...argv.slice(1)] };
  }
  return { command: spec.python, args: ["-c", watchdogSource(), ...flags, "--exec", ...argv] };
}

export class LocalKernelProcess implements LaunchedKernel {
  readonly transport: ZmqTransport;
  readonly interruptMode: "signal" | "message";
  readonly exited: Promise<string>;
  readonly connectionFile: string;
  readonly connection: ConnectionInfo;
  readonly isolation: Promise<KernelIsolation>;
  private readonly child: ChildProcess;
  private running = true;
  private stderr = "";
  private stdout = "";
  private reported?: KernelIsolation;
  /** The kernel's init's pid when it runs below its relay (pid 1 of its namespace, own group). */
  private kernelPid?: number;
  /** The kernel process itself (the init's child), once found. */
  private kernelItself?: number;
  /** The limits its init put in force (limits.py), read when it dies and removed after. */
  private applied?: AppliedLimits;
  /** pids.events of the kernel's group, read at each execution's start and end. */
  private readonly refusals = new ProcessRefusalReader();

  private constructor(spec: KernelSpec, info: ConnectionInfo, file: string, options: LaunchOptions) {
    this.connection = info;
    this.connectionFile = file;
    this.interruptMode = spec.interruptMode;
    this.transport = new ZmqTransport(info, randomUUID(), options.heartbeat);
    const argv = spec.argv.map((a) =>
      a.replaceAll("{connection_file}", file).replaceAll("{resource_dir}", spec.resourceDir ?? ""),
    );
    const own = info.transport === "ipc" ? [file, dirname(info.ip)] : [file];
    const confine = confineSpec(dirname(file), own, options.confinement, options.sandbox, options.limits);
    const wrapped = wrapperArgs(spec, argv, wantsPidNamespace(options));
    let { command, args } = wrapped;
    let bwrapOptions: string[] | undefined;
    const sandbox = options.sandbox;
    if (sandbox) {
      const bwrap = options.bwrap ?? findBwrap({});
      if (!bwrap) throw new KernelStartError({ kind: "no-sandbox", why: NO_BWRAP });
      const cwd = options.cwd ?? process.cwd();
      const writable = writablePaths(sandbox, cwd, dirname(file), own.slice(1));
      const size = bwrapSizesTmpfs(bwrap) ? confine.limits?.tmpfsBytes : undefined;
      // bwrap's options (every folder it binds) go on a descriptor, not argv, which every user's
      // ps shows (docs/isolation.md, R6); the command stays on argv after "--".
      const all = bwrapArgs(sandbox, writable, cwd, size);
      bwrapOptions = all.slice(0, all.lastIndexOf("--"));
      args = ["--args", String(BWRAP_ARGS_FD), "--", command, ...args];
      command = bwrap;
    }
    const sandboxReport = sandbox
      ? {
          writable: writablePaths(sandbox, options.cwd ?? process.cwd(), dirname(file), own.slice(1)),
          network: sandbox.network,
        }
      : undefined;
    const env: Record<string, string> = {
      ...options.env,
      ...spec.env,
    };
    env.PYDEVD_DISABLE_FILE_VALIDATION ??= "1";
    // As jupyter_client, outside a PID namespace (inside, the init ties the kernel to the host).
    if (!wantsPidNamespace(options)) env.JPY_PARENT_PID = String(process.pid);
    try {
      this.child = spawn(command, args, {
        cwd: options.cwd,
        env,
        detached: true,
        stdio: ["pipe", "pipe", "pipe", "pipe", bwrapOptions ? "pipe" : "ignore"],
      });
    } catch (err) {
      void this.transport.close();
      throw err;
    }
    const confinePipe = this.child.stdio?.[CONFINE_FD] as NodeJS.WritableStream | null;
    confinePipe?.on("error", () => {}); // a wrapper that died before reading: its exit says why
    confinePipe?.end(JSON.stringify(confine));
    const bwrapPipe = this.child.stdio?.[BWRAP_ARGS_FD] as NodeJS.WritableStream | null;
    bwrapPipe?.on("error", () => {});
    bwrapPipe?.end((bwrapOptions ?? []).map((a) => `${a}\0`).join(""));
    let reportIsolation!: (isolation: KernelIsolation) => void;
    this.isolation = new Promise((resolve) => {
      reportIsolation = (isolation) => {
        if (this.reported) return;
        this.reported = sandboxReport ? { ...isolation, sandbox: sandboxReport } : isolation;
        resolve(this.reported);
      };
    });
    const keep = (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
    };
    this.child.stdout?.on("data", (chunk: Buffer) => {
      keep(chunk);
      if (this.reported) return;
      this.stdout = (this.stdout + chunk.toString("utf8")).slice(-STDERR_TAIL);
      const line = parseIsolationLine(this.stdout);
      if (!line) return;
      // The wrapper's report is not the kernel's output (which stderrTail() shows in errors).
      this.stderr = this.stderr.replace(/\n?NBAGENT_ISOLATION [^\n]*\n/, "");
      const { kernel, limits, ...isolation } = line;
      this.applied = limits as AppliedLimits | undefined;
      // Signalled later by group: only a process below the one this host spawned (docs/isolation.md).
      if (typeof kernel === "number" && this.running && below(kernel, this.child.pid)) {
        this.kernelPid = kernel;
        liveGroups.add(kernel);
      }
      reportIsolation(isolation as unknown as KernelIsolation);
    });
    this.child.stderr?.on("data", keep);
    // The stdin pipe is the watchdog's lifeline: never written, closed only when this host dies.
    this.child.stdin?.on("error", () => {});
    this.exited = new Promise((resolve) => {
      const done = (reason: string) => {
        if (!this.running) return;
        this.running = false;
        reportIsolation({ pidNamespace: false, reason: `the kernel exited before it said (${reason})` });
        for (const pid of this.groups()) {
          liveGroups.delete(pid);
          killGroup(pid, "SIGKILL"); // sweep what the kernel left in its group
        }
        resolve(reason);
      };
      // 'exit' can come before the last of its stderr is read ("Address already in use" decides a
      // retry): wait for the pipe to drain, but not for a grandchild that may hold it open.
      this.child.once("exit", (code, signal) => {
        const reason = signal ? `signal ${signal}` : `exit code ${code}`;
        const stderr = this.child.stderr;
        if (!stderr || stderr.readableEnded || stderr.destroyed) return done(reason);
        const timer = setTimeout(() => done(reason), STDERR_DRAIN_MS);
        timer.unref();
        stderr.once("close", () => {
          clearTimeout(timer);
          done(reason);
        });
      });
      this.child.once("error", (err) => done(`could not start ${command}: ${err.message}`));
    });
    if (this.child.pid) liveGroups.add(this.child.pid);
    installExitHook();
    // Neither the process nor its pipes keep the host's event loop alive.
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr, confinePipe, bwrapPipe]) {
      (s as unknown as { unref?: () => void } | null)?.unref?.();
    }
  }

  static async launch(spec: KernelSpec, options: LaunchOptions = {}): Promise<LocalKernelProcess> {
    if (options.cwd && !existsSync(options.cwd)) {
      throw new KernelStartError({ kind: "no-cwd", cwd: options.cwd });
    }
    const base = await newConnectionPath(options.runtimeDir ?? defaultRuntimeDir());
    // Without a network (net-off) every kernel needs unix sockets; otherwise every kernel that can.
    const ipc =
      (options.sandbox && !options.sandbox.network) || speaksIpc(spec.argv, spec.python)
        ? await newIpcPrefix(base)
        : undefined;
    const info = ipc
      ? await createConnectionInfo(spec.name, ipc, "ipc")
      : await createConnectionInfo(spec.name);
    const file = await writeConnectionFile(info, base);
    try {
      return new LocalKernelProcess(spec, info, file, options);
    } catch (err) {
      await removeConnectionFile(file, info);
      throw err;
    }
  }

  /** The spawned process's group (the relay's, or bwrap's), and the kernel's own when it has one. */
  private groups(): number[] {
    return [this.child.pid, this.kernelPid].filter((p): p is number => p !== undefined);
  }

  cpuTimeMs(): number | undefined {
    return processCpuMs(this.pid);
  }

  /** Its memory cgroup's charge, else the resident memory of the kernel and what it started. */
  memoryBytes(): number | undefined {
    if (!this.running) return undefined;
    return readMemoryCurrent(this.applied) ?? processTreeRssBytes(this.pid);
  }

  /** The kernel process itself as the host sees it: below its relay and init (pid 1 of the
   * namespace) when isolated, what observers measure or stop; signals go to the leaders' groups. */
  get pid(): number | undefined {
    if (this.kernelPid === undefined) return this.child.pid;
    this.kernelItself ??= firstChild(this.kernelPid);
    return this.kernelItself ?? this.kernelPid;
  }

  isRunning(): boolean {
    return this.running;
  }

  async interrupt(): Promise<void> {
    if (this.interruptMode === "message") return sendInterruptRequest(this.transport);
    const pid = this.kernelPid ?? this.child.pid; // the init passes it on to the kernel's group
    if (this.running && pid) killGroup(pid, "SIGINT");
  }

  /** SIGTERM reaches an isolated kernel through its relay (pid 1 of a namespace ignores it). */
  async kill(graceMs: number): Promise<void> {
    if (!this.running || !this.child.pid) return;
    await stopGroups(
      { groups: () => this.groups(), isRunning: () => this.running, exited: this.exited },
      graceMs,
    );
  }

  limitHit(): KernelLimitHit | undefined {
    return readLimitHit(this.applied);
  }

  processStartsRefused(): { maxProcesses: number; refused: number } | undefined {
    return this.refusals.read(this.applied);
  }

  async cleanup(): Promise<void> {
    await removeConnectionFile(this.connectionFile, this.connection);
    this.refusals.close();
    await removeLimitCgroupsWhenEmpty(this.applied);
  }

  retryable(): boolean {
    return /Address already in use/i.test(this.stderr);
  }

  stderrTail(): string {
    return this.stderr;
  }
}

/** How long an exited kernel's stderr may take to drain before the exit is reported anyway. */
const STDERR_DRAIN_MS = 500;
