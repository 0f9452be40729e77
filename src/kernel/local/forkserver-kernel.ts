/**
 * One kernel forked by the fork server (forkserver.ts): the LaunchedKernel the local backend hands to
 * ConnectedKernel, like LocalKernelProcess but without a spawn of its own. The forked child (`leader`)
 * leads its own process group (interrupt and kill go to the group); its exit comes from the server's reports;
 * its stdout/stderr go to a log file next to the connection file (read for the stderr tail).
 * In a PID namespace (docs/isolation.md) the leader is the kernel's init (pid 1 of its namespace: it
 * passes SIGTERM and SIGINT on to the kernel) or, without root, the init's relay; `pid` is always the
 * kernel process itself, as the host sees it (what observers measure or stop).
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { rm } from "../../sys/fs-promises.js";
import type { LaunchedKernel } from "../provisioner.js";
import type { KernelIsolation, KernelLimitHit } from "../types.js";
import type { ConnectionInfo } from "../zmq/connection.js";
import type { ZmqTransport } from "../zmq/transport.js";
import { removeConnectionFile } from "./connection-file.js";
import {
  descendant,
  killGroup,
  processCpuMs,
  processTreeRssBytes,
  sendInterruptRequest,
  stopGroups,
} from "./launcher.js";
import {
  type AppliedLimits,
  ProcessRefusalReader,
  readLimitHit,
  readMemoryCurrent,
  removeLimitCgroupsWhenEmpty,
} from "./limits.js";

const STDERR_TAIL = 16 * 1024;

export class ForkedKernelProcess implements LaunchedKernel {
  readonly exited: Promise<string>;
  readonly isolation: Promise<KernelIsolation>;
  private running = true;
  private resolveExit!: (reason: string) => void;
  private resolveIsolation!: (isolation: KernelIsolation) => void;
  private reported?: KernelIsolation;
  /** The limits its init put in force (limits.py), read when it dies and removed after. */
  private applied?: AppliedLimits;
  /** pids.events of the kernel's group, read at each execution's start and end. */
  private readonly refusals = new ProcessRefusalReader();
  /** The leader is a relay: the kernel is two levels down (relay → init → kernel). */
  private relay = false;
  /** The leader is the kernel's init (pid 1 of its namespace); the kernel is its child. */
  private nsInit = false;
  /** The kernel process itself, once found below the leader. */
  private kernelItself?: number;

  constructor(
    readonly leader: number,
    readonly transport: ZmqTransport,
    readonly interruptMode: "signal" | "message",
    readonly connection: ConnectionInfo,
    readonly connectionFile: string,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
    this.isolation = new Promise((resolve) => {
      this.resolveIsolation = resolve;
    });
  }

  /** What the forked child reported (the server passes it on); the first report counts. */
  reportIsolation(report: KernelIsolation & { limits?: AppliedLimits }, relay = false): void {
    if (this.reported) return;
    const { limits, ...isolation } = report;
    this.applied = limits;
    this.reported = isolation;
    this.relay = relay && !!isolation.via;
    this.nsInit = !relay && !!isolation.via;
    this.resolveIsolation(isolation);
  }

  /** The kernel process itself (below its init, or its relay and init, when isolated). */
  get pid(): number {
    if (!this.relay && !this.nsInit) return this.leader;
    this.kernelItself ??= descendant(this.leader, this.relay ? 2 : 1);
    return this.kernelItself ?? this.leader;
  }

  /** Called by the server on the kernel's exit report, or when the server itself is gone. */
  markExited(reason: string): void {
    if (!this.running) return;
    this.running = false;
    this.reportIsolation({ pidNamespace: false, reason: `the kernel exited before it said (${reason})` });
    killGroup(this.leader, "SIGKILL"); // sweep what the kernel left in its group
    this.resolveExit(reason);
  }

  isRunning(): boolean {
    return this.running;
  }

  async interrupt(): Promise<void> {
    if (this.interruptMode === "message") return sendInterruptRequest(this.transport);
    if (this.running) killGroup(this.leader, "SIGINT");
  }

  async kill(graceMs: number): Promise<void> {
    if (!this.running) return;
    // The init (pid 1 of the namespace) passes SIGTERM on to the kernel.
    const target = { groups: () => [this.leader], isRunning: () => this.running, exited: this.exited };
    await stopGroups(target, graceMs);
  }

  limitHit(): KernelLimitHit | undefined {
    return readLimitHit(this.applied);
  }

  processStartsRefused(): { maxProcesses: number; refused: number } | undefined {
    return this.refusals.read(this.applied);
  }

  async cleanup(): Promise<void> {
    await removeConnectionFile(this.connectionFile, this.connection);
    await rm(this.logFile, { force: true });
    this.refusals.close();
    await removeLimitCgroupsWhenEmpty(this.applied);
  }

  retryable(): boolean {
    return /Address already in use/i.test(this.stderrTail());
  }

  stderrTail(): string {
    return readTail(this.logFile, STDERR_TAIL);
  }

  cpuTimeMs(): number | undefined {
    return processCpuMs(this.pid);
  }

  /** Its memory cgroup's charge, else the resident memory of the kernel and what it started. */
  memoryBytes(): number | undefined {
    if (!this.running) return undefined;
    return readMemoryCurrent(this.applied) ?? processTreeRssBytes(this.pid);
  }
}

/** The last `max` bytes of a file as text ("" if it is missing). */
export function readTail(path: string, max: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const size = fstatSync(fd).size;
    const length = Math.min(size, max);
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, size - length);
    return buf.subarray(0, n).toString("utf8");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
