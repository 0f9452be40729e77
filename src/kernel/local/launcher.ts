/**
 * Starts one local kernel process: connection file, sockets connected first, then the kernel spawned
 * through the watchdog wrapper in its own process group (detached), env given at spawn, stdout/stderr
 * drained into a small tail buffer (a full pipe would block the kernel). Kills by process group.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import type { LaunchedKernel } from "../provisioner.js";
import {
  type ConnectionInfo,
  createConnectionInfo,
  removeConnectionFile,
  writeConnectionFile,
} from "./connection-file.js";
import type { KernelSpec } from "./kernelspec.js";
import { WATCHDOG_PY } from "./watchdog.js";
import { type HeartbeatOptions, ZmqTransport } from "./zmq-transport.js";

export interface LaunchOptions {
  cwd?: string;
  /** Full environment of the kernel (the caller filters secrets); default process.env. */
  env?: Record<string, string>;
  heartbeat?: HeartbeatOptions;
  /** Directory for the connection file (default os.tmpdir()). */
  runtimeDir?: string;
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
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces, so split after its closing parenthesis):
    // state is field 3, utime and stime are fields 14 and 15, in clock ticks (100 per second).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

function wrapperArgs(spec: KernelSpec, argv: string[]): { command: string; args: string[] } {
  if (/^python[0-9.]*$/.test(basename(argv[0]))) {
    return { command: argv[0], args: ["-c", WATCHDOG_PY, ...argv.slice(1)] };
  }
  return { command: spec.python, args: ["-c", WATCHDOG_PY, "--exec", ...argv] };
}

export class LocalKernelProcess implements LaunchedKernel {
  readonly transport: ZmqTransport;
  readonly interruptMode: "signal" | "message";
  readonly exited: Promise<string>;
  readonly connectionFile: string;
  readonly connection: ConnectionInfo;
  private readonly child: ChildProcess;
  private running = true;
  private stderr = "";

  private constructor(spec: KernelSpec, info: ConnectionInfo, file: string, options: LaunchOptions) {
    this.connection = info;
    this.connectionFile = file;
    this.interruptMode = spec.interruptMode;
    this.transport = new ZmqTransport(info, randomUUID(), options.heartbeat);
    const argv = spec.argv.map((a) =>
      a.replaceAll("{connection_file}", file).replaceAll("{resource_dir}", spec.resourceDir ?? ""),
    );
    const { command, args } = wrapperArgs(spec, argv);
    const env: Record<string, string> = {
      ...((options.env ?? process.env) as Record<string, string>),
      ...spec.env,
    };
    env.PYDEVD_DISABLE_FILE_VALIDATION ??= "1";
    env.JPY_PARENT_PID = String(process.pid); // as jupyter_client: the kernel also watches its parent
    try {
      this.child = spawn(command, args, {
        cwd: options.cwd,
        env,
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
    } catch (err) {
      void this.transport.close();
      throw err;
    }
    const keep = (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
    };
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
    // The stdin pipe is the watchdog's lifeline: never written, closed only when this host dies.
    this.child.stdin?.on("error", () => {});
    this.exited = new Promise((resolve) => {
      const done = (reason: string) => {
        if (!this.running) return;
        this.running = false;
        if (this.child.pid) {
          liveGroups.delete(this.child.pid);
          killGroup(this.child.pid, "SIGKILL"); // sweep what the kernel left in its group
        }
        resolve(reason);
      };
      this.child.once("exit", (code, signal) => done(signal ? `signal ${signal}` : `exit code ${code}`));
      this.child.once("error", (err) => done(`could not start ${command}: ${err.message}`));
    });
    if (this.child.pid) liveGroups.add(this.child.pid);
    installExitHook();
    // Neither the process nor its pipes keep the host's event loop alive.
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      (s as unknown as { unref?: () => void } | null)?.unref?.();
    }
  }

  static async launch(spec: KernelSpec, options: LaunchOptions = {}): Promise<LocalKernelProcess> {
    if (options.cwd && !existsSync(options.cwd)) {
      throw new Error(
        `Error: the kernel's working directory ${options.cwd} does not exist; create it or pass another cwd`,
      );
    }
    const info = await createConnectionInfo(spec.name);
    const file = await writeConnectionFile(info, options.runtimeDir);
    try {
      return new LocalKernelProcess(spec, info, file, options);
    } catch (err) {
      await removeConnectionFile(file);
      throw err;
    }
  }

  cpuTimeMs(): number | undefined {
    return processCpuMs(this.pid);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  isRunning(): boolean {
    return this.running;
  }

  signalInterrupt(): void {
    if (this.running && this.child.pid) killGroup(this.child.pid, "SIGINT");
  }

  async kill(graceMs: number): Promise<void> {
    const pid = this.child.pid;
    if (!this.running || !pid) return;
    if (graceMs > 0 && killGroup(pid, "SIGTERM")) {
      await Promise.race([this.exited, delay(graceMs)]);
    }
    if (this.running) killGroup(pid, "SIGKILL");
    await Promise.race([this.exited, delay(2000)]);
  }

  async cleanup(): Promise<void> {
    await removeConnectionFile(this.connectionFile);
  }

  retryable(): boolean {
    return /Address already in use/i.test(this.stderr);
  }

  stderrTail(): string {
    return this.stderr;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
