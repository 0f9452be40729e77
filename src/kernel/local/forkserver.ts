/**
 * Pre-warmed fork server ("zygote") for local ipykernel kernels. Importing ipykernel costs about a
 * second per kernel; forkserver.py pays it once per (interpreter, startup environment) and then forks a
 * real, separate kernel process per request in ~0.2 s. ForkServerPool decides per launch:
 * - only kernelspecs that are exactly `<python> -m ipykernel_launcher|ipykernel …` for the
 *   interpreter that resolved them are forked; anything else launches the normal way;
 * - the server is started by the second eligible launch (or `prewarm()`), which itself starts the
 *   normal way while the server warms up; later launches wait for the server and fork. A process
 *   that needs one kernel never pays for a server (on 2 cores a server warming in parallel made a
 *   single cold start ~1.35× slower);
 * - the environment variables Python/ipykernel read while starting or importing (PYTHON*, locale,
 *   HOME, USER, JPY_*, …) key the server, so a kernel never inherits another environment's startup;
 * - a server that fails to start or dies twice is not used again (normal launches from then on).
 * Orphans: the server reads the host's pipe on stdin and ends every kernel's group at EOF (host exit,
 * SIGTERM, SIGKILL); kernels die with the server (PR_SET_PDEATHSIG) and the host sweeps their groups.
 * Isolation (docs/isolation.md): each forked kernel gets a PID namespace of its own (the forked
 * child stays outside as its relay, pidns.py); the server itself starts with only the variables
 * that key it, because a forked kernel's /proc/self/environ shows the server's start environment.
 * Sandboxed kernels are never forked (they start the normal way, under bubblewrap).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { assetPath } from "../../assets.js";
import { debugLog } from "../../sys/debug-log.js";
import { rm } from "../../sys/fs-promises.js";
import { readProcStat } from "../../sys/proc.js";
import { within } from "../../sys/wait.js";
import { KernelStartError } from "../errors.js";
import type { LaunchedKernel } from "../provisioner.js";
import type { KernelIsolation } from "../types.js";
import { ZmqTransport } from "../zmq/transport.js";
import { confineSpec } from "./confine.js";
import {
  createConnectionInfo,
  defaultRuntimeDir,
  newConnectionPath,
  newIpcPrefix,
  removeConnectionFile,
  writeConnectionFile,
} from "./connection-file.js";
import { ForkedKernelProcess } from "./forkserver-kernel.js";
import type { KernelSpec } from "./kernelspec.js";
import { killGroup, type LaunchOptions, wantsPidNamespace } from "./launcher.js";

export const FORKSERVER_PY = assetPath("kernel/local/forkserver.py");

/** Read by the interpreter at startup or by ipykernel/IPython/traitlets at import time. */
const STARTUP_ENV =
  /^(PYTHON.*|LANG|LANGUAGE|LC_.*|HOME|USER|JPY_.*|IPYTHON.*|TRAITLETS_.*|PYDEVD_.*|DEBUGPY_.*|JUPYTER_PLATFORM_DIRS)$/;
const MAX_SERVERS = 2;
const MAX_FAILURES = 2;
const STDERR_TAIL = 8 * 1024;
/** Isolation reports kept for pids whose fork reply has not been read yet. */
const MAX_EARLY = 64;
/**
 * File descriptors a forked start needs in the host (connection-file ports, zmq sockets and their
 * TCP connections). Below this headroom the launch goes the normal way, where running out of
 * descriptors fails the spawn with EMFILE (which callers handle) instead of zmq retrying silently.
 */
const FD_HEADROOM = 40;

/** Whether the host has FD_HEADROOM descriptors to spare (true when it cannot tell). */
export function hasFdHeadroom(headroom = FD_HEADROOM): boolean {
  try {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
    if (!soft || soft === "unlimited") return true;
    return Number(soft) - readdirSync("/proc/self/fd").length >= headroom;
  } catch {
    return true;
  }
}

const liveServers = new Set<ForkServer>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const server of liveServers) server.killNow();
  });
}

interface ForkPlan {
  module: string;
  args: string[];
}

/** `<python> -m ipykernel_launcher|ipykernel …` for the spec's own interpreter, else undefined. */
export function forkPlan(spec: KernelSpec): ForkPlan | undefined {
  const [command, flag, module, ...args] = spec.argv;
  if (command !== spec.python || flag !== "-m") return undefined;
  if (module !== "ipykernel_launcher" && module !== "ipykernel") return undefined;
  if (!args.includes("{connection_file}")) return undefined;
  return { module, args };
}

/** The kernel's environment, as LocalKernelProcess builds it. */
export function kernelEnvironment(spec: KernelSpec, options: LaunchOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  Object.assign(env, spec.env);
  env.PYDEVD_DISABLE_FILE_VALIDATION ??= "1";
  // Only outside a PID namespace: inside, the kernel's parent is its init (pid 1), which ipykernel
  // takes for a dead parent when JPY_PARENT_PID is set (it reads it once, at import).
  if (!wantsPidNamespace(options)) env.JPY_PARENT_PID = String(process.pid);
  return env;
}

/** The server's own environment: only what keys it (a forked kernel can read it in /proc/self/environ). */
export function serverEnvironment(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (STARTUP_ENV.test(k)) out[k] = v;
  return out;
}

export function startupSignature(env: Record<string, string>): string {
  return Object.keys(env)
    .filter((k) => STARTUP_ENV.test(k))
    .sort()
    .map((k) => `${k}=${env[k]}`)
    .join("\0");
}

interface Pending {
  resolve: (pid: number) => void;
  reject: (err: Error) => void;
}

export class ForkServer {
  readonly ready: Promise<void>;
  /** Resolves with a reason once the server process is gone. */
  readonly gone: Promise<string>;
  state: "starting" | "ready" | "dead" = "starting";
  disposing = false;
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private readonly kernels = new Map<number, ForkedKernelProcess>();
  private readonly earlyExits = new Map<number, string>();
  private readonly earlyIsolation = new Map<number, { info: KernelIsolation; relay: boolean }>();
  /** Pids the server replied with (its children), until their exit is reported. */
  private readonly forked = new Set<number>();
  /** Why the server was stopped for breaking its protocol. */
  private breached?: string;
  private nextId = 1;
  private holds = 0;
  private stderr = "";

  constructor(
    readonly python: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(python, [FORKSERVER_PY], {
      cwd: "/",
      env: serverEnvironment(env),
      detached: true, // its own group: a terminal's Ctrl-C reaches neither it nor its kernels
      stdio: ["pipe", "pipe", "pipe"],
    });
    liveServers.add(this);
    installExitHook();
    let markReady!: () => void;
    let failStart!: (err: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    this.ready.catch(() => {});
    this.gone = new Promise((resolve) => {
      const done = (reason: string) => {
        if (this.state === "dead") return;
        this.state = "dead";
        liveServers.delete(this);
        const tail = this.stderr.trim();
        const err = new KernelStartError({
          kind: "fork-server",
          what: "exited",
          detail: reason,
          ...(tail ? { stderrTail: tail } : {}),
        });
        failStart(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        const why = this.breached ?? `the fork server exited (${reason})`;
        for (const kernel of this.kernels.values()) kernel.markExited(why);
        this.kernels.clear();
        this.setHold(0);
        resolve(reason);
      };
      this.child.once("exit", (code, signal) =>
        done(this.breached ?? (signal ? `signal ${signal}` : `exit code ${code}`)),
      );
      this.child.once("error", (err) => done(`could not start ${python}: ${err.message}`));
    });
    this.child.stdin?.on("error", () => {});
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
    });
    const lines = createInterface({ input: this.child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => this.onLine(line, markReady, failStart));
    this.setHold(0);
  }

  /** Keeps the host's event loop alive only while someone waits for the server (or its exit). */
  private setHold(delta: number): void {
    this.holds = this.state === "dead" ? 0 : Math.max(0, this.holds + delta);
    const hold = this.holds > 0;
    if (hold) this.child.ref();
    else this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      const handle = s as unknown as { ref?: () => void; unref?: () => void } | null;
      if (hold) handle?.ref?.();
      else handle?.unref?.();
    }
  }

  /**
   * One line of the server's stdout. The server alone writes there, but a kernel is forked from it,
   * so the host trusts no line it did not ask for (docs/isolation.md, "The fork server's channel"):
   * one reply per request id, a pid that is the server's own child and not 1 or the server, an
   * isolation report or exit only for such a pid. Anything else ends the server (and so its
   * kernels, each told why) — never a signal to a process the host did not see forked.
   */
  private onLine(line: string, markReady: () => void, failStart: (err: Error) => void): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
      if (typeof msg !== "object" || msg === null || Array.isArray(msg)) throw new Error("not an object");
    } catch {
      this.breach(`a line that is not a JSON object: ${JSON.stringify(line.slice(0, 80))}`);
      return;
    }
    if ("ready" in msg || "fatal" in msg) {
      if (this.state !== "starting") {
        this.breach("a second start report");
        return;
      }
      if ("fatal" in msg) {
        failStart(new KernelStartError({ kind: "fork-server", what: "fatal", detail: String(msg.fatal) }));
      } else if (msg.error) {
        failStart(new KernelStartError({ kind: "fork-server", what: "unsafe", detail: String(msg.error) }));
        this.child.kill("SIGKILL");
      } else {
        this.state = "ready";
        markReady();
      }
    } else if ("isolation" in msg) {
      const pid = msg.isolation;
      // A child may report before the server's reply with its pid is read: kept until then.
      if (!this.isChildPid(pid) || (!this.forked.has(pid) && this.pending.size === 0)) {
        this.breach(`an isolation report for a process it did not fork (${String(pid)})`);
        return;
      }
      const info = msg.info as KernelIsolation;
      const relay = msg.relay === true;
      const kernel = this.kernels.get(pid);
      if (kernel) kernel.reportIsolation(info, relay);
      else if (this.earlyIsolation.size < MAX_EARLY) this.earlyIsolation.set(pid, { info, relay });
    } else if ("exit" in msg) {
      const pid = msg.exit;
      if (typeof pid !== "number" || !this.forked.has(pid)) {
        this.breach(`an exit of a process it did not fork (${String(pid)})`);
        return;
      }
      this.forked.delete(pid);
      const reason = msg.signal ? `signal ${msg.signal}` : `exit code ${msg.code}`;
      const kernel = this.kernels.get(pid);
      if (kernel) {
        this.kernels.delete(pid);
        kernel.markExited(reason);
      } else this.earlyExits.set(pid, reason);
    } else if ("id" in msg) {
      const id = Number(msg.id);
      const p = this.pending.get(id);
      if (!p) {
        this.breach(`a reply to no request (id ${String(msg.id)})`);
        return;
      }
      this.pending.delete(id);
      if (typeof msg.pid === "number") {
        const pid = msg.pid;
        if (!this.isChildPid(pid) || this.forked.has(pid) || !this.ownChild(pid)) {
          p.reject(new KernelStartError({ kind: "fork-server", what: "refused", detail: "a bad reply" }));
          this.breach(`a reply naming a process it did not fork (${pid})`);
          return;
        }
        this.forked.add(pid);
        p.resolve(pid);
      } else
        p.reject(new KernelStartError({ kind: "fork-server", what: "refused", detail: String(msg.error) }));
    } else {
      this.breach(`a line of no known kind (${Object.keys(msg).slice(0, 3).join(", ")})`);
    }
  }

  /** A pid a child of the server could have: a whole number above 1 that is not the server's. */
  private isChildPid(pid: unknown): pid is number {
    return typeof pid === "number" && Number.isSafeInteger(pid) && pid > 1 && pid !== this.child.pid;
  }

  /** Whether /proc says `pid`'s parent is the server (true when it is already gone: nothing to signal). */
  private ownChild(pid: number): boolean {
    const stat = readProcStat(pid);
    return stat === undefined || stat.ppid === this.child.pid;
  }

  /** The server said something it never says: it is stopped, with its kernels, and the reason kept. */
  private breach(what: string): void {
    if (this.state === "dead" || this.breached) return;
    this.breached = `the fork server broke its protocol (${what}) and was stopped`;
    this.stderr += `\nnbagent: ${this.breached}\n`;
    process.emitWarning(this.breached, { code: "FORK_SERVER_PROTOCOL_BREACH" });
    this.killNow();
  }

  /** Waits for the server's imports (keeping the host alive meanwhile). */
  async whenReady(): Promise<void> {
    this.setHold(1);
    try {
      await this.ready;
    } finally {
      this.setHold(-1);
    }
  }

  private async fork(request: Record<string, unknown>): Promise<number> {
    if (this.state !== "ready") throw new KernelStartError({ kind: "fork-server", what: "not-running" });
    const id = this.nextId++;
    this.setHold(1);
    const t0 = performance.now();
    // The request as the log shows it: no environment (it may hold what the kernel was given).
    debugLog("fork-request", { server: this.child.pid, id, module: request.module, cwd: request.cwd });
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        this.child.stdin?.write(`${JSON.stringify({ id, ...request })}\n`);
      });
      debugLog("fork-reply", { server: this.child.pid, id, pid, tookMs: Math.round(performance.now() - t0) });
      return pid;
    } catch (err) {
      debugLog("fork-failed", { server: this.child.pid, id, error: (err as Error).message });
      throw err;
    } finally {
      this.setHold(-1);
    }
  }

  /** Forks one kernel: connection file and sockets first, as LocalKernelProcess does. */
  async launch(
    spec: KernelSpec,
    plan: ForkPlan,
    env: Record<string, string>,
    options: LaunchOptions,
  ): Promise<LaunchedKernel> {
    const base = await newConnectionPath(options.runtimeDir ?? defaultRuntimeDir());
    const ipc = await newIpcPrefix(base); // docs/isolation.md, "A kernel's channels are its own"
    const info = ipc
      ? await createConnectionInfo(spec.name, ipc, "ipc")
      : await createConnectionInfo(spec.name);
    const file = await writeConnectionFile(info, base);
    const log = `${base}.log`;
    const pidns = wantsPidNamespace(options);
    const transport = new ZmqTransport(info, randomUUID(), options.heartbeat);
    try {
      const args = plan.args.map((a) =>
        a.replaceAll("{connection_file}", file).replaceAll("{resource_dir}", spec.resourceDir ?? ""),
      );
      const pid = await this.fork({
        cwd: options.cwd ?? process.cwd(),
        env,
        module: plan.module,
        args,
        log,
        pidns,
        confine: confineSpec(
          dirname(file),
          ipc ? [file, dirname(ipc)] : [file],
          options.confinement,
          undefined,
          options.limits,
        ),
      });
      const kernel = new ForkedKernelProcess(pid, transport, spec.interruptMode, info, file, log);
      if (!pidns) kernel.reportIsolation({ pidNamespace: false, reason: "turned off (NBAGENT_PIDNS=0)" });
      const isolation = this.earlyIsolation.get(pid);
      this.earlyIsolation.delete(pid);
      if (isolation) kernel.reportIsolation(isolation.info, isolation.relay);
      const early = this.earlyExits.get(pid);
      this.earlyExits.delete(pid);
      if (early) kernel.markExited(early);
      else if (this.state === "dead") kernel.markExited("the fork server exited");
      else this.kernels.set(pid, kernel);
      return kernel;
    } catch (err) {
      await transport.close();
      await removeConnectionFile(file, info);
      await rm(log, { force: true });
      throw err;
    }
  }

  /** Synchronous last resort at host exit: every kernel's group, then the server. */
  killNow(): void {
    for (const pid of this.kernels.keys()) killGroup(pid, "SIGKILL");
    if (this.child.pid) killGroup(this.child.pid, "SIGKILL");
  }

  /** SIGTERM: the server ends its kernels' groups and exits. */
  async dispose(): Promise<void> {
    this.disposing = true;
    if (this.state === "dead") return;
    this.setHold(1); // a host disposing its backend waits for the server's exit
    this.child.kill("SIGTERM");
    const gone = await within(this.gone, 3000);
    if (!gone) this.killNow();
    this.setHold(-1);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether it was stopped for breaking its protocol. */
  get breachedProtocol(): boolean {
    return this.breached !== undefined;
  }
}

/** The fork servers of one backend, keyed by interpreter and startup environment. */
export class ForkServerPool {
  private readonly servers = new Map<string, ForkServer>();
  private readonly failures = new Map<string, number>();
  private readonly seen = new Set<string>();
  private disposed = false;

  /** A forked kernel, or undefined when this launch should go the normal way. */
  async launch(spec: KernelSpec, options: LaunchOptions, retry = false): Promise<LaunchedKernel | undefined> {
    const plan = forkPlan(spec);
    if (!plan || this.disposed || options.sandbox) return undefined;
    if (options.cwd && !existsSync(options.cwd)) return undefined; // the normal path reports it
    if (!hasFdHeadroom()) return undefined;
    const env = kernelEnvironment(spec, options);
    const key = `${spec.python}\0${startupSignature(env)}`;
    const server = this.server(key);
    if (!server) {
      // The first kernel of a kind goes the normal way; a second one is the sign that more will come
      // (a retried launch of the same start is not a second kernel).
      if (this.seen.has(key) && !retry) this.warm(key, spec.python, env);
      this.seen.add(key);
      return undefined;
    }
    try {
      await server.whenReady();
      return await server.launch(spec, plan, env, options);
    } catch {
      return undefined;
    }
  }

  /** Starts the server for kernels like this one now (a caller that knows several will follow). */
  prewarm(spec: KernelSpec, options: LaunchOptions): void {
    if (!forkPlan(spec) || this.disposed || options.sandbox) return;
    const env = kernelEnvironment(spec, options);
    const key = `${spec.python}\0${startupSignature(env)}`;
    this.seen.add(key);
    if (!this.server(key)) this.warm(key, spec.python, env);
  }

  private server(key: string): ForkServer | undefined {
    const server = this.servers.get(key);
    if (server?.state !== "dead") return server;
    this.servers.delete(key);
    return undefined;
  }

  private warm(key: string, python: string, env: Record<string, string>): void {
    if ((this.failures.get(key) ?? 0) >= MAX_FAILURES || this.servers.size >= MAX_SERVERS) return;
    const server = new ForkServer(python, env);
    this.servers.set(key, server);
    const fail = () => this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    server.ready.catch(fail);
    void server.gone.then(() => {
      // A server whose channel a kernel could write is not trusted again in this host.
      if (server.breachedProtocol) this.failures.set(key, MAX_FAILURES);
      if (!server.disposing && !this.disposed) {
        server.ready.then(fail, () => {});
      }
      if (this.servers.get(key) === server) this.servers.delete(key);
    });
  }

  /** The servers' pids (tests and diagnostics). */
  pids(): number[] {
    return [...this.servers.values()].flatMap((s) => (s.pid ? [s.pid] : []));
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const servers = [...this.servers.values()];
    this.servers.clear();
    await Promise.all(servers.map((s) => s.dispose()));
  }
}
