/**
 * Connection files for local kernels: a random HMAC key and five unix sockets in a folder of the
 * kernel's own (ZeroMQ's ipc transport: only a process that can see the folder can connect, and each
 * kernel sees only its own — docs/isolation.md, "A kernel's channels are its own"), or five free TCP
 * ports on 127.0.0.1 for kernels that build TCP endpoints themselves (IRkernel, IJulia) and where the
 * socket path would be too long.
 * They live in the per-user state directory, `<NBAGENT_STATE_DIR or $TMPDIR/nbagent-<uid>>/kernels`
 * (mode 0700), named after the host's pid; files of hosts that are gone (a SIGKILLed host cannot
 * clean up) are swept when the next host writes its first file (docs/isolation.md).
 * Ports are chosen by letting the OS pick (bind to port 0) and releasing them; the remaining race
 * (someone takes a port before the kernel binds it) is handled by the launcher, which recognises
 * the kernel's "Address already in use" exit and starts again with fresh ports.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { lstatSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { freePorts, NoFreePortError } from "../../sys/free-ports.js";
import { chmod, mkdir, readdir, rm, writeFile } from "../../sys/fs-promises.js";
import { processAlive } from "../../sys/proc.js";
import { type StateDirEnv, stateDir } from "../../sys/state-dir.js";
import { KernelStartError } from "../errors.js";
import type { ConnectionInfo } from "../zmq/connection.js";

/** Five free ports on `host` for a kernel's channels (sys/free-ports.ts), a KernelStartError when the OS gives none. */
async function channelPorts(host: string): Promise<number[]> {
  try {
    return await freePorts(5, host);
  } catch (err) {
    throw err instanceof NoFreePortError ? new KernelStartError({ kind: "no-port" }) : err;
  }
}

/**
 * The per-user state directory's `kernels` folder: under NBAGENT_STATE_DIR of `env`, else
 * $TMPDIR/nbagent-<uid> (sys/state-dir.ts). The runtime passes the folder of the resolved state
 * directory (runtime/settings.ts); `{}` gives the plain default.
 */
export function defaultRuntimeDir(env: StateDirEnv = {}): string {
  return join(stateDir(env), "kernels");
}

/**
 * Files this module names: `kernel-<host pid>-<uuid>` + `.json`, `.log`, or `.ipc` (the folder of a
 * kernel's unix sockets: one folder, so it alone can be put back into the kernel's view), and
 * `-ipc-<n>` (sockets of older versions).
 */
const OWN_FILE = /^kernel-(\d+)-(?:[0-9a-f-]{36}(?:\.json|\.log|\.ipc|-ipc-\d+)|[0-9a-f]{12}\.ipc)$/;
const swept = new Set<string>();

/** Removes the files of hosts that are gone; returns how many. */
export async function sweepStaleFiles(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const m = OWN_FILE.exec(name);
    if (!m || Number(m[1]) === process.pid || processAlive(Number(m[1]))) continue;
    await rm(join(dir, name), { force: true, recursive: true });
    removed++;
  }
  return removed;
}

/** Makes the directory (0700: the files hold signing keys) and sweeps it once per process. */
async function prepareDir(dir: string): Promise<void> {
  if (swept.has(dir)) return;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  swept.add(dir);
  await sweepStaleFiles(dir);
}

export async function createConnectionInfo(
  kernelName: string,
  ip = "127.0.0.1",
  transport: "tcp" | "ipc" = "tcp",
): Promise<ConnectionInfo> {
  // ipc: `ip` is the socket path prefix and the "ports" only tell the five sockets apart.
  const [shell, iopub, stdin, control, hb] = transport === "ipc" ? [1, 2, 3, 4, 5] : await channelPorts(ip);
  return {
    transport,
    ip,
    shell_port: shell,
    iopub_port: iopub,
    stdin_port: stdin,
    control_port: control,
    hb_port: hb,
    key: randomBytes(32).toString("hex"),
    signature_scheme: "hmac-sha256",
    kernel_name: kernelName,
  };
}

/** A fresh `<dir>/kernel-<host pid>-<uuid>` (the directory made and swept first). */
export async function newConnectionPath(dir = defaultRuntimeDir()): Promise<string> {
  await prepareDir(dir);
  return join(dir, `kernel-${process.pid}-${randomUUID()}`);
}

/** Writes `<base>.json` (mode 0600: it holds the signing key) and returns its path. */
export async function writeConnectionFile(info: ConnectionInfo, base: string): Promise<string> {
  const path = `${base}.json`;
  await writeFile(path, JSON.stringify(info), { mode: 0o600 });
  return path;
}

/** The longest path a unix socket can have (sun_path, less its final NUL). */
const MAX_SOCKET_PATH = 107;

/** Where every kernel's socket folder of this user lives: one place whatever the state directory. */
export const SOCKET_ROOT_PARENT = "/tmp";

/**
 * The user's socket root, `/tmp/nbagent-ipc-<uid>` (made 0700 when missing), or undefined when it
 * cannot be had safely (not a folder of this user with mode 0700, no /tmp, no uid). One fixed place
 * for every nbagent host of the user, whatever its state directory or TMPDIR, so that every kernel
 * hides all of the user's kernels' sockets, not only those of its own host's state directory
 * (docs/isolation.md, "R2. A kernel's channels are its own"). Short, too: socket paths are limited
 * to 107 bytes.
 */
export function socketRoot(parent = SOCKET_ROOT_PARENT): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir = join(parent, `nbagent-ipc-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  try {
    const st = lstatSync(dir);
    // Someone else's folder, a link, or one others may enter: not a place for this user's sockets.
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return undefined;
  } catch {
    return undefined;
  }
  return dir;
}

/**
 * A kernel's socket folder (0700), made now, and the sockets' prefix in it: the folder is
 * `kernel-<host pid>-<first 12 hex digits of base's uuid>.ipc` in the user's socket root (else beside
 * the connection file), the sockets `<folder>/k-<n>`. Undefined when even that path is too long (a
 * deep state directory without a socket root): the kernel then takes TCP.
 */
export async function newIpcPrefix(base: string): Promise<string | undefined> {
  const m = /^(.*\/)?(kernel-\d+-)([0-9a-f]{8})-([0-9a-f]{4})/.exec(base);
  const name = m ? `${m[2]}${m[3]}${m[4]}.ipc` : `${basename(base)}.ipc`;
  const root = socketRoot();
  if (root) {
    if (!swept.has(root)) {
      swept.add(root);
      await sweepStaleFiles(root).catch(() => 0); // what cannot be removed now, a later host will
    }
    // A root that cannot take the folder (a read-only /tmp): beside the connection file instead.
    const folder = join(root, name);
    if (
      await mkdir(folder, { mode: 0o700 }).then(
        () => true,
        () => false,
      )
    )
      return join(folder, "k");
  }
  const folder = join(dirname(base), name);
  if (Buffer.byteLength(join(folder, "k-5")) > MAX_SOCKET_PATH) return undefined;
  await mkdir(folder, { mode: 0o700 });
  return join(folder, "k");
}

/**
 * Whether a kernel started by `argv` takes ZeroMQ's ipc transport: every kernel that runs on Python
 * (ipykernel and the kernels built on it: Octave's, metakernel's) reads `transport` and joins
 * `ip-port`. Kernels of other languages (IRkernel, IJulia) join `transport://ip:port` themselves,
 * which is no ipc address: they keep TCP on 127.0.0.1.
 */
export function speaksIpc(argv: readonly string[], python: string): boolean {
  const command = argv[0] ?? "";
  return command === python || /^python[0-9.]*$/.test(basename(command));
}

/** Removes the file and, for ipc, the kernel's socket folder. */
export async function removeConnectionFile(path: string, info?: ConnectionInfo): Promise<void> {
  await rm(path, { force: true });
  if (info?.transport === "ipc") await rm(dirname(info.ip), { force: true, recursive: true });
}
