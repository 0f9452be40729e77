/**
 * The shared local gateway (docs/backends.md, "Shared local gateway"): one jupyter_server per user
 * and interpreter, started on demand by whichever nbagent process needs it first and found by the
 * others through `<state>/gateway/<key>/info.json`.
 *
 * - started as `<python> -c <launcher> <dir> …` (the launcher takes the token out of the environment
 *   so kernels never see it, then runs jupyter_server), bound to 127.0.0.1 on a free port, with a
 *   random token (never unauthenticated), root dir "/", no user or system Jupyter config
 *   (JUPYTER_NO_CONFIG), in a session of its own so it outlives the process that started it; its
 *   output goes to `server.log` (a file, not a pipe that can fill);
 * - its python3 kernelspec (JUPYTER_PATH → `<dir>/share/jupyter`) runs the same watchdog / PID
 *   namespace wrapper as local kernels, with interrupts by message (the wrapper's relay ignores
 *   SIGINT);
 * - `lock` is held while starting or stopping, so racing processes start one server; a stale lock
 *   (holder dead or pid reused), a dead pid in info.json, a pid that is alive but not this server, or
 *   an interpreter that does not match are all answered by starting a fresh server;
 * - idle kernels are culled by the server itself (cull_idle_timeout), so named-session kernels with no
 *   client go away even when no nbagent process runs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { writeFileAtomicSync } from "../../sys/atomic-write.js";
import { freePort } from "../../sys/free-ports.js";
import { processAlive, processArgs } from "../../sys/proc.js";
import { stateDir } from "../../sys/state-dir.js";
import { findInterpreter } from "../interpreter.js";
import { watchdogSource } from "../local/watchdog.js";
import { GatewayRest } from "./rest.js";
import { API, KERNELS, restUrl, SHUTDOWN, STATUS } from "./restapi.js";
import { acquireLock } from "./start-lock.js";

export interface LocalGatewayInfo {
  url: string;
  token: string;
  pid: number;
  /** The interpreter the server (and its python3 kernels) runs, as chosen. */
  python: string;
  logFile: string;
  /** ISO time the server became ready. */
  startedAt: string;
  /** jupyter_server's version (GET /api). */
  serverVersion?: string;
  /** The idle-kernel cull timeout it was started with (seconds; absent = no culling). */
  idleCullSeconds?: number;
}

export interface LocalGatewayOptions {
  /** Interpreter (default: findInterpreter's choice in hostEnv: NBAGENT_PYTHON, VIRTUAL_ENV, ./.venv, PATH). */
  python?: string;
  /** The host's environment, captured at the edge, where an interpreter is looked for (default none). */
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Where the interpreter's choice is remembered (default $TMPDIR/nbagent-<uid>). */
  interpreterCacheDir?: string;
  /** The per-user state directory (default $TMPDIR/nbagent-<uid>; the edges pass the resolved one). */
  stateRoot?: string;
}

export interface EnsureLocalGatewayOptions extends LocalGatewayOptions {
  /**
   * The server's (and so its kernels') environment. The caller passes a secret-filtered one
   * (docs/secrets.md); without it only a small list of ordinary variables of hostEnv is passed
   * (PATH, HOME, …).
   */
  env?: Record<string, string>;
  /** The server's kernels in a PID namespace of their own where possible (default true). */
  pidNamespace?: boolean;
  /** Kernels idle (and without a client) this long are shut down by the server; 0/absent = never. */
  idleCullSeconds?: number;
  /**
   * The server shuts itself down after this long with no kernels and no requests (default 3600 s;
   * 0 = never); the next call starts it again.
   */
  serverIdleShutdownSeconds?: number;
  /** How long the server may take to answer /api/status (default 60 s). */
  startTimeoutMs?: number;
}

/**
 * The idle-kernel cull the CLI starts the server with unless told otherwise: the same 5 minutes after
 * which a process's own sessions are disposed (src/runtime/sessions.ts).
 */
export const DEFAULT_IDLE_CULL_SECONDS = 300;

/** A shared gateway with no kernels and no requests for an hour shuts itself down. */
export const DEFAULT_SERVER_IDLE_SHUTDOWN_SECONDS = 3600;

const INFO = "info.json";
const LOCK = "lock";
const LOG = "server.log";
const DEFAULT_START_TIMEOUT_MS = 60_000;
const PROBE_TIMEOUT_MS = 5_000;
const TOKEN_ENV = "NBAGENT_GATEWAY_TOKEN_FOR_SERVER";
const LIFELINE = "lifeline";

/**
 * Put before the wrapper in the kernelspec: the wrapper ends the kernel when its stdin reaches end of
 * input, but jupyter_client closes the kernel's stdin pipe right after the launch. So stdin becomes
 * the server's lifeline FIFO instead, which reaches end of input exactly when the server is gone
 * (it holds the only writer), also when it is SIGKILLed.
 */
function lifelinePrefix(): string {
  // The FIFO is beside the confinement file the kernelspec names (its path is not written into this
  // code: the code is on the command line, which every user's ps shows).
  return `
import os as _os, sys as _sys
try:
    _at = [a for a in _sys.argv if a.startswith("--confine-file=")][0][len("--confine-file="):]
    _fd = _os.open(_os.path.join(_os.path.dirname(_at), ${JSON.stringify(LIFELINE)}), _os.O_RDONLY | _os.O_NONBLOCK)
    _os.set_blocking(_fd, True)
    _os.dup2(_fd, 0)
    _os.close(_fd)
except (OSError, IndexError) as _err:
    _os.write(2, ("nbagent: no lifeline to the gateway server (%s); the kernel will end at once\\n" % _err).encode())
`;
}

/**
 * Runs jupyter_server with the token given in the environment (popped, so kernels do not inherit
 * it). argv[1] is the gateway's state directory: it marks the process as this gateway's server
 * (checked through /proc/<pid>/cmdline before it is ever signalled).
 */
const LAUNCHER = `
import os, sys
token = os.environ.pop("${TOKEN_ENV}", "")
if len(token) < 32:
    sys.exit("nbagent: no token given; refusing to start an unauthenticated server")
lifeline = os.path.join(sys.argv[1], "${LIFELINE}")
try:
    os.unlink(lifeline)
except FileNotFoundError:
    pass
os.mkfifo(lifeline, 0o600)
keep = os.open(lifeline, os.O_RDWR)  # never written; not inherited (PEP 446); closes when the server dies
sys.argv = ["nbagent-gateway"] + sys.argv[2:]
import stat
from jupyter_server.serverapp import ServerApp
from jupyter_client.ioloop import AsyncIOLoopKernelManager


class NbagentKernelManager(AsyncIOLoopKernelManager):
    """Each kernel's five channels are unix sockets in a folder of its own beside its connection
    file, which alone is put back into the kernel's view (docs/isolation.md): no kernel can reach
    another's. TCP on 127.0.0.1 only where the socket path would be too long."""

    def _ipc_folder(self):
        # In the user's socket root, as local kernels' (connection-file.ts socketRoot), named as the
        # hosts name theirs with the server's pid, so a host sweeps what a SIGKILLed server left.
        base = os.path.dirname(self.connection_file or "")
        kid = os.path.basename(self.connection_file or "").replace("kernel-", "").replace("-", "")[:12]
        root = "/tmp/nbagent-ipc-%d" % os.getuid()
        try:
            os.mkdir(root, 0o700)
        except OSError:
            pass
        try:
            st = os.lstat(root)
            if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077 == 0):
                root = base
        except OSError:
            root = base
        folder = os.path.join(root, "kernel-%d-%s.ipc" % (os.getpid(), kid))
        return folder if base and len(os.path.join(folder, "k-99").encode()) <= 107 else None

    def _transport_default(self):
        return "ipc" if self._ipc_folder() else "tcp"

    def _ip_default(self):
        if self.transport != "ipc":
            return super()._ip_default()
        folder = self._ipc_folder()
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.path.join(folder, "k")

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.transport == "ipc":
            try:
                os.rmdir(os.path.dirname(self.ip))
            except OSError:
                pass

    cleanup_resources = _async_cleanup_resources  # as jupyter_client's AsyncKernelManager names it


ServerApp.launch_instance(token=token)
`;

/** Ordinary variables a server gets when the caller passes no environment. */
const PLAIN_ENV =
  /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|TZ|TMPDIR|TERM|VIRTUAL_ENV|CONDA_PREFIX|PYTHONPATH|NBAGENT_PIDNS|LC_[A-Z]+|XDG_[A-Z_]+)$/;

function plainEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && PLAIN_ENV.test(k)) out[k] = v;
  return out;
}

/**
 * What identifies an interpreter's environment: its path with symlinks followed, but never out of a
 * virtual environment (a venv's bin/python links to the base interpreter, yet is another environment).
 */
export function interpreterKey(python: string): string {
  let current = resolve(python);
  for (let hops = 0; hops < 40; hops++) {
    let dir: string;
    try {
      dir = realpathSync(dirname(current));
    } catch {
      return current;
    }
    current = join(dir, basename(current));
    if (existsSync(join(dirname(dir), "pyvenv.cfg"))) return current;
    try {
      if (!lstatSync(current).isSymbolicLink()) return current;
      const target = readlinkSync(current);
      current = isAbsolute(target) ? target : resolve(dir, target);
    } catch {
      return current;
    }
  }
  return current;
}

/**
 * `<stateRoot>/gateway/<hash of the interpreter key>`, absolute (the server runs in it, and its
 * kernels find the lifeline FIFO by this path from any working directory).
 */
export function gatewayDir(stateRoot: string, python: string): string {
  const hash = createHash("sha256").update(interpreterKey(python)).digest("hex").slice(0, 16);
  return join(resolve(stateRoot), "gateway", hash);
}

/**
 * The interpreter: a given one is used as it is (the caller has chosen it; probing it again would
 * cost every call a Python start), else findInterpreter's choice.
 */
async function chosenPython(options: LocalGatewayOptions): Promise<string> {
  const python = options.python;
  if (!python)
    return (await findInterpreter({ env: options.hostEnv, cacheDir: options.interpreterCacheDir })).path;
  try {
    accessSync(python, constants.X_OK);
  } catch {
    throw new Error(`Python interpreter ${python} is not an executable file`);
  }
  return python;
}

function readInfo(dir: string): LocalGatewayInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(join(dir, INFO), "utf8")) as LocalGatewayInfo;
    return typeof info.url === "string" && typeof info.token === "string" && typeof info.pid === "number"
      ? info
      : undefined;
  } catch {
    return undefined;
  }
}

function writeInfo(dir: string, info: LocalGatewayInfo): void {
  writeFileAtomicSync(join(dir, INFO), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
}

function removeInfo(dir: string, pid: number): void {
  if (readInfo(dir)?.pid !== pid) return;
  try {
    unlinkSync(join(dir, INFO));
  } catch {
    /* gone */
  }
}

/** True when /proc shows `pid` is this directory's server (the launcher's argv[1]); undefined if unreadable. */
function isOurServer(pid: number, dir: string): boolean | undefined {
  const args = processArgs(pid);
  if (!args) return undefined;
  return args.includes(dir) && args.includes("-c");
}

/** One REST call to the server with its token; every HTTP status is an answer (node:http, no fetch). */
async function fetchJson(
  url: string,
  token: string,
  init: { method?: string; timeoutMs?: number } = {},
): Promise<{ status: number; body: unknown }> {
  const { origin, pathname } = new URL(url);
  const timeoutMs = init.timeoutMs ?? PROBE_TIMEOUT_MS;
  const rest = new GatewayRest({
    url: origin,
    token,
    requestTimeoutMs: timeoutMs,
    connectTimeoutMs: timeoutMs,
  });
  const res = await rest.request(init.method ?? "GET", pathname, { accept: "any" });
  return { status: res.status, body: res.json ?? res.body };
}

/** The server answers /api/status with this token. */
async function answers(info: LocalGatewayInfo): Promise<boolean> {
  try {
    return (await fetchJson(restUrl(info.url, STATUS), info.token)).status === 200;
  } catch {
    return false;
  }
}

/** info.json describes a live server of this interpreter that answers with its token. */
async function healthy(info: LocalGatewayInfo | undefined, dir: string, key: string): Promise<boolean> {
  if (!info || !processAlive(info.pid)) return false;
  if (interpreterKey(info.python) !== key) return false;
  if (isOurServer(info.pid, dir) === false) return false;
  return answers(info);
}

function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** The server's python3 kernelspec: the local backend's wrapper around ipykernel_launcher. */
function writeKernelSpec(dir: string, python: string, pidNamespace: boolean): string {
  const share = join(dir, "share", "jupyter");
  const specDir = join(share, "kernels", "python3");
  mkdirSync(specDir, { recursive: true, mode: 0o700 });
  const flag = pidNamespace ? "--pidns" : "--no-pidns";
  const confineFile = join(dir, "confine.json");
  writeFileAtomicSync(
    confineFile,
    JSON.stringify({ hide: [dirname(dirname(dir))], expose: [], exposeConnectionFile: true }),
  );
  const spec = {
    argv: [
      python,
      "-c",
      `${lifelinePrefix()}\n${watchdogSource()}`,
      // The server's kernels see none of nbagent's state (its token is in info.json there, other
      // kernels' connection files in runtime/): the whole state directory is hidden, only the
      // kernel's own connection file and socket folder are put back (docs/isolation.md). Read
      // from a file: argv shows in every user's `ps`.
      `--confine-file=${confineFile}`,
      flag,
      "-m",
      "ipykernel_launcher",
      "-f",
      "{connection_file}",
      // History in memory, as for local kernels (src/kernel/local/backend.ts): no shared SQLite file.
      "--HistoryManager.hist_file=:memory:",
    ],
    display_name: "Python 3 (ipykernel)",
    language: "python",
    interrupt_mode: "message",
    // The launcher starts ipykernel without debugpy (endkernel.py import_ipykernel): no debugger.
    metadata: { debugger: false },
  };
  writeFileSync(join(specDir, "kernel.json"), JSON.stringify(spec, null, 1), { mode: 0o600 });
  return share;
}

function serverArgs(dir: string, port: number, options: EnsureLocalGatewayOptions): string[] {
  const { idleCullSeconds } = options;
  const idleShutdown = options.serverIdleShutdownSeconds ?? DEFAULT_SERVER_IDLE_SHUTDOWN_SECONDS;
  const args = [
    "-c",
    LAUNCHER,
    dir,
    "--ServerApp.ip=127.0.0.1",
    `--ServerApp.port=${port}`,
    "--ServerApp.port_retries=0",
    "--ServerApp.open_browser=False",
    "--ServerApp.root_dir=/",
    // No IOPub rate limit: over it jupyter_server drops output and says so in the stream, while the
    // python tool bounds what the model sees itself and spills the rest to an artifact (docs/output.md).
    "--ServerApp.limit_rate=False",
    // Unix sockets per kernel instead of TCP ports any local process could join (LAUNCHER).
    "--AsyncMappingKernelManager.kernel_manager_class=__main__.NbagentKernelManager",
  ];
  if (process.getuid?.() === 0) args.push("--ServerApp.allow_root=True");
  if (idleShutdown > 0) args.push(`--ServerApp.shutdown_no_activity_timeout=${Math.ceil(idleShutdown)}`);
  if (idleCullSeconds && idleCullSeconds > 0) {
    const interval = Math.max(1, Math.min(60, Math.floor(idleCullSeconds / 2)));
    args.push(
      `--MappingKernelManager.cull_idle_timeout=${Math.ceil(idleCullSeconds)}`,
      `--MappingKernelManager.cull_interval=${interval}`,
    );
  }
  return args;
}

/** Keeps one previous log (server.log.1); the new server writes a fresh server.log. */
function openLog(file: string): number {
  if (existsSync(file)) {
    try {
      renameSync(file, `${file}.1`);
    } catch {
      /* keep appending */
    }
  }
  return openSync(file, "a", 0o600);
}

interface Started {
  info: LocalGatewayInfo;
}

async function startServer(
  dir: string,
  python: string,
  options: EnsureLocalGatewayOptions,
): Promise<Started> {
  const base = options.env ?? plainEnv(options.hostEnv ?? {});
  const share = writeKernelSpec(dir, python, options.pidNamespace ?? true);
  const runtimeDir = join(dir, "runtime");
  mkdirSync(runtimeDir, { recursive: true, mode: 0o700 });
  const logFile = join(dir, LOG);
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    const token = randomBytes(32).toString("hex");
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      ...base,
      [TOKEN_ENV]: token,
      JUPYTER_NO_CONFIG: "1",
      JUPYTER_RUNTIME_DIR: runtimeDir,
      JUPYTER_PATH: [share, base.JUPYTER_PATH].filter(Boolean).join(":"),
      PYDEVD_DISABLE_FILE_VALIDATION: base.PYDEVD_DISABLE_FILE_VALIDATION ?? "1",
    };
    const fd = openLog(logFile);
    let child: ChildProcess;
    try {
      child = spawn(python, serverArgs(dir, port, options), {
        cwd: dir,
        env,
        detached: true,
        stdio: ["ignore", fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    let exited: string | undefined;
    child.once("exit", (code, signal) => {
      exited = signal ? `signal ${signal}` : `exit code ${code}`;
    });
    child.once("error", (err) => {
      exited = `could not start ${python}: ${err.message}`;
    });
    child.unref();
    const pid = child.pid ?? 0;
    const deadline = Date.now() + timeoutMs;
    let version: string | undefined;
    let ready = false;
    while (exited === undefined && Date.now() < deadline) {
      try {
        const status = await fetchJson(restUrl(url, STATUS), token, { timeoutMs: 2000 });
        if (status.status === 200) {
          ready = true;
          break;
        }
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    if (ready) {
      try {
        const api = await fetchJson(restUrl(url, API), token);
        version = (api.body as { version?: string }).version;
      } catch {
        /* version unknown */
      }
      const info: LocalGatewayInfo = {
        url,
        token,
        pid,
        python,
        logFile,
        startedAt: new Date().toISOString(),
        ...(version ? { serverVersion: version } : {}),
        ...(options.idleCullSeconds && options.idleCullSeconds > 0
          ? { idleCullSeconds: options.idleCullSeconds }
          : {}),
      };
      return { info };
    }
    if (exited === undefined) killGroupHard(pid);
    const tail = logTail(logFile);
    if (exited !== undefined && attempt < 3 && /already in use|Errno 98/i.test(tail)) continue;
    const why =
      exited !== undefined
        ? `exited (${exited}) before it answered`
        : `did not answer ${restUrl(url, STATUS)} within ${Math.round(timeoutMs / 1000)} s`;
    const hint = /No module named .?jupyter_server/.test(tail)
      ? `\nFix: install jupyter_server for ${python} (Debian: apt-get install python3-jupyter-server; venv: pip install jupyter_server).`
      : "";
    throw new Error(
      `the shared local gateway (${python} -m jupyter_server) ${why}; log ${logFile}:\n${tail}${hint}`,
    );
  }
}

function killGroupHard(pid: number): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}

/** Ends a server that is alive but does not answer (or is being replaced): its group, hard. */
async function endServer(pid: number, dir: string, graceMs: number): Promise<void> {
  if (!processAlive(pid) || isOurServer(pid, dir) === false) return;
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, "SIGTERM");
      break;
    } catch {
      /* try the next */
    }
  }
  if (await waitGone(pid, graceMs)) return;
  killGroupHard(pid);
  await waitGone(pid, 5000);
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

function prepareDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/**
 * The live shared gateway for this interpreter, started when there is none (or the recorded one is
 * dead, not ours, or of another interpreter). Concurrent callers get the same server.
 */
export async function ensureLocalGateway(options: EnsureLocalGatewayOptions = {}): Promise<LocalGatewayInfo> {
  const python = await chosenPython(options);
  const key = interpreterKey(python);
  const dir = gatewayDir(options.stateRoot ?? stateDir({}), python);
  prepareDir(dir);
  const found = readInfo(dir);
  if (await healthy(found, dir, key)) return found!;
  const release = await acquireLock(join(dir, LOCK), {
    timeoutMs: (options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS) + 30_000,
  });
  try {
    // Another process may have started it while this one waited for the lock.
    const current = readInfo(dir);
    if (await healthy(current, dir, key)) return current!;
    if (current) await endServer(current.pid, dir, 3000);
    const { info } = await startServer(dir, python, options);
    writeInfo(dir, info);
    return info;
  } finally {
    release?.();
  }
}

/** The running shared gateway of this interpreter, or undefined (none, dead, not answering). */
export async function localGatewayStatus(
  options: LocalGatewayOptions = {},
): Promise<LocalGatewayInfo | undefined> {
  const python = await chosenPython(options);
  const dir = gatewayDir(options.stateRoot ?? stateDir({}), python);
  const info = readInfo(dir);
  return (await healthy(info, dir, interpreterKey(python))) ? info : undefined;
}

/**
 * Shuts this interpreter's shared gateway down (POST /api/shutdown, which ends its kernels; then
 * SIGTERM / SIGKILL of its process group if it lingers) and removes info.json. True when one was running.
 */
export async function stopLocalGateway(options: LocalGatewayOptions = {}): Promise<boolean> {
  const python = await chosenPython(options);
  const dir = gatewayDir(options.stateRoot ?? stateDir({}), python);
  if (!existsSync(dir)) return false;
  const release = await acquireLock(join(dir, LOCK), { timeoutMs: DEFAULT_START_TIMEOUT_MS + 30_000 });
  try {
    const info = readInfo(dir);
    if (!info) return false;
    const running = processAlive(info.pid) && isOurServer(info.pid, dir) !== false;
    if (running) {
      let asked = false;
      try {
        asked = (await fetchJson(restUrl(info.url, SHUTDOWN), info.token, { method: "POST" })).status < 300;
      } catch {
        /* not answering: signals below */
      }
      if (!asked || !(await waitGone(info.pid, 10_000))) await endServer(info.pid, dir, 3000);
    }
    removeInfo(dir, info.pid);
    return running;
  } finally {
    release?.();
  }
}

/** Every shared gateway under the state root whose server process is alive. */
export async function listLocalGateways(options: { stateRoot?: string } = {}): Promise<LocalGatewayInfo[]> {
  const root = join(options.stateRoot ?? stateDir({}), "gateway");
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const out: LocalGatewayInfo[] = [];
  for (const name of names.sort()) {
    const dir = join(root, name);
    const info = readInfo(dir);
    if (info && processAlive(info.pid) && isOurServer(info.pid, dir) !== false) out.push(info);
  }
  return out;
}

/** The kernels a gateway runs now (GET /api/kernels), or undefined when it does not answer. */
export async function localGatewayKernelCount(info: LocalGatewayInfo): Promise<number | undefined> {
  try {
    const res = await fetchJson(restUrl(info.url, KERNELS), info.token);
    return res.status === 200 && Array.isArray(res.body) ? res.body.length : undefined;
  } catch {
    return undefined;
  }
}
