/**
 * Where and how a kernel runs (jupyter_client's "provisioner"): start it and hand back a transport,
 * interrupt by signal, kill. ConnectedKernel does everything else, the same for every backend.
 */
import type { KernelTransport } from "./transport.js";
import type { KernelIsolation } from "./types.js";

export interface LaunchedKernel {
  readonly transport: KernelTransport;
  /** "message": interrupt_request on control; "signal": `signalInterrupt()`. */
  readonly interruptMode: "signal" | "message";
  /** Process id when there is a local process (tests and diagnostics). */
  readonly pid?: number;
  /** Resolves (never rejects) with a human reason once the kernel process is gone. */
  readonly exited: Promise<string>;
  isRunning(): boolean;
  /** SIGINT to the kernel's process group (signal mode). */
  signalInterrupt?(): void;
  /** SIGTERM (bounded by graceMs, 0 = skip), then SIGKILL of the process group; resolves when gone. */
  kill(graceMs: number): Promise<void>;
  /** Remove what the launch left behind (connection file). Idempotent. */
  cleanup(): Promise<void>;
  /** After a failed start: is it worth launching again (e.g. a port was taken)? */
  retryable?(): boolean;
  /** Recent stderr of the kernel process, for error messages. */
  stderrTail?(): string;
  /** What the kernel is kept from, once the launch has reported it (before the kernel answers). */
  readonly isolation?: Promise<KernelIsolation>;
  /** CPU time the kernel process has used so far, when it can be read (a slow start vs a hung one). */
  cpuTimeMs?(): number | undefined;
}

export interface KernelProvisioner {
  readonly backend: "local" | "gateway";
  launch(): Promise<LaunchedKernel>;
}
