/**
 * Where and how a kernel runs (jupyter_client's "provisioner"): start it (or join one another process
 * started) and hand back a transport; interrupt, restart and stop it by the backend's own means (a
 * signal, a control message, a REST call). ConnectedKernel does everything else, the same for every
 * backend (docs/backends.md).
 */
import type { KernelTransport } from "./transport.js";
import type { KernelIsolation, KernelLimitHit } from "./types.js";

export interface LaunchedKernel {
  readonly transport: KernelTransport;
  /** Process id when there is a local process (tests and diagnostics). */
  readonly pid?: number;
  /** The server's id for the kernel (gateway backends): what another process attaches to. */
  readonly kernelId?: string;
  /** The execution state the server reported when this kernel was joined (attach; gateway backends). */
  readonly serverState?: string;
  /**
   * Resolves (never rejects) with a human reason once the kernel is gone: its process ended, or the
   * server says it no longer exists. A lost connection that is being re-established is not an exit.
   */
  readonly exited: Promise<string>;
  isRunning(): boolean;
  /**
   * Interrupts the running code by the backend's means: SIGINT to the process group, an
   * interrupt_request on the control channel (kernelspec interrupt_mode "message"), or the
   * gateway's REST interrupt. Resolves once the interrupt was delivered (not once the kernel is idle).
   */
  interrupt(): Promise<void>;
  /**
   * Restarts the kernel keeping its identity (the same gateway kernel id; state is lost) and resolves
   * once it was asked to; the transport stays usable. Absent: ConnectedKernel stops this kernel and
   * launches a new one.
   */
  restart?(): Promise<void>;
  /** Stops the kernel: SIGTERM (bounded by graceMs, 0 = skip) then SIGKILL, or DELETE; resolves when gone. */
  kill(graceMs: number): Promise<void>;
  /** Remove what the launch left behind (connection file). Idempotent. */
  cleanup(): Promise<void>;
  /** After a failed start: is it worth launching again (e.g. a port was taken)? */
  retryable?(): boolean;
  /** Recent stderr of the kernel process, for error messages. */
  stderrTail?(): string;
  /** What the kernel is kept from, once the launch has reported it (before the kernel answers). */
  readonly isolation?: Promise<KernelIsolation>;
  /**
   * Whether a resource limit ended (or hampered) the kernel, read when it is found dead (local
   * kernels with cgroup limits: docs/isolation.md, "Limits"); undefined when none or unknown.
   */
  limitHit?(): KernelLimitHit | undefined;
  /**
   * How many starts of a process or thread the kernel's process limit has refused so far (a cgroup
   * counts them; rlimits do not): undefined when there is no such count.
   */
  processStartsRefused?(): { maxProcesses: number; refused: number } | undefined;
  /** CPU time the kernel process has used so far, when it can be read (a slow start vs a hung one). */
  cpuTimeMs?(): number | undefined;
  /**
   * The memory the kernel uses now, in bytes: its memory cgroup's charge, else the resident memory
   * of its processes (local kernels); undefined when it cannot be read (remote kernels).
   */
  memoryBytes?(): number | undefined;
  /**
   * Called once the kernel answered kernel_info after a start or restart: waits until whatever else
   * watches the kernel has caught up with it. A gateway server's own IOPub listener can join after
   * the kernel's first status; until it sees one it reports the kernel "starting" through a whole
   * first cell, and a reconnect in that time loses an IOPub message (docs/backends.md). `ping` makes
   * the kernel publish a status. Best effort, bounded by `signal`; never rejects.
   */
  settle?(ping: () => Promise<void>, signal: AbortSignal): Promise<void>;
}

export interface KernelProvisioner {
  readonly backend: "local" | "gateway";
  /**
   * A new kernel process. `retry`: this launch repeats one that failed during the same start (a
   * port lost to a race, a mute kernel): not one more kernel (the fork server pool counts kernels).
   */
  launch(retry?: boolean): Promise<LaunchedKernel>;
  /** Joins a running kernel by its server id (gateway backends); absent where kernels cannot be shared. */
  attach?(kernelId: string): Promise<LaunchedKernel>;
}
