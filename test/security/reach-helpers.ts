/**
 * Host-side parts of issue 29's attacks (reach.test.ts): the victims the attacks aim at (a process
 * group of the test's own, SysV IPC objects and a POSIX message queue the test creates), the process
 * table (to find the fork server, the gateway's kernels, and to wait for processes to end), an MCP
 * HTTP server with clients, and bounded waits for events.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { httpClient, textOf } from "../mcp/helpers.js";
import { type Answer, command, MCP_SECRET, NOBODY_UID, type Place, PYTHON, type Who } from "./harness.js";

/** Polls `check` every 50 ms until it returns a value other than undefined; fails after `ms`. */
export async function waitFor<T>(what: string, ms: number, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  state: string;
  start: string;
  cmdline: string;
}

/** One process from /proc, or undefined when it is gone. */
export function proc(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {}
    return { pid, ppid: Number(rest[1]), state: rest[0], start: rest[19], cmdline };
  } catch {
    return undefined;
  }
}

/** Every process the host can see. */
export function processTable(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const p = proc(Number(name));
    if (p) out.push(p);
  }
  return out;
}

/** The processes below `root` (not itself). */
export function descendants(root: number, table = processTable()): ProcInfo[] {
  const children = new Map<number, ProcInfo[]>();
  for (const p of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: ProcInfo[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(root);
  return out;
}

/** Whether this process (same pid, same start time) still runs (a zombie counts as gone). */
export function stillRuns(p: ProcInfo): boolean {
  const now = proc(p.pid);
  return now !== undefined && now.start === p.start && now.state !== "Z";
}

/** The host's fork servers (below the host process): forkserver.py processes whose parent is not one. */
export function forkServersOf(hostPid: number): ProcInfo[] {
  const table = processTable();
  const below = descendants(hostPid, table);
  const byPid = new Map(table.map((p) => [p.pid, p]));
  return below.filter(
    (p) => p.cmdline.includes("forkserver.py") && !byPid.get(p.ppid)?.cmdline.includes("forkserver.py"),
  );
}

/** The inode of a process's fd when it is a socket or pipe (`socket:[N]`, `pipe:[N]`). */
export function fdInode(pid: number, fd: number): number | undefined {
  try {
    const m = /^(?:socket|pipe):\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A victim process group: `sleep 1000` started by the test, detached (its own group), as the
 * principal's user. alive() says whether it still runs; stop() ends it.
 */
export class Victim {
  readonly child: ChildProcess;
  readonly pid: number;
  private readonly info: ProcInfo;

  constructor(who: Who) {
    const ids = who === "nobody" ? { uid: NOBODY_UID, gid: NOBODY_UID } : {};
    this.child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore", ...ids });
    const pid = this.child.pid;
    assert.ok(pid && pid > 1, "the victim did not start");
    this.pid = pid;
    const info = proc(pid);
    assert.ok(info, "the victim is not in /proc");
    this.info = info;
  }

  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && stillRuns(this.info);
  }

  /** How it ended, for messages. */
  fate(): string {
    const now = proc(this.pid);
    if (this.child.signalCode) return `killed by ${this.child.signalCode}`;
    if (now?.state === "Z") return "a zombie (killed, not reaped yet)";
    return now ? `state ${now.state}` : "gone";
  }

  stop(): void {
    if (this.alive()) this.child.kill("SIGKILL");
  }
}

/** The host's namespace of a kind (`ipc:[4026531839]`). */
export function hostNamespace(kind: "ipc" | "cgroup"): string {
  return readlinkSync(`/proc/self/ns/${kind}`);
}

const IPC_HELPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
IPC_CREAT, IPC_EXCL, IPC_RMID, SHM_RDONLY = 0o1000, 0o2000, 0, 0o10000
cmd, key = sys.argv[1], int(sys.argv[2])
def check(rc, what):
    if rc is None or rc == -1 or rc == ctypes.c_void_p(-1).value:
        sys.exit("%s: %s" % (what, os.strerror(ctypes.get_errno())))
    return rc
if cmd == "create":
    data = bytes.fromhex(sys.argv[3])
    shm = check(libc.shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0o600), "shmget")
    addr = check(libc.shmat(shm, None, 0), "shmat")
    ctypes.memmove(addr, data, len(data))
    libc.shmdt(addr)
    check(libc.msgget(key, IPC_CREAT | IPC_EXCL | 0o600), "msgget")
    check(libc.semget(key, 1, IPC_CREAT | IPC_EXCL | 0o600), "semget")
    libc.mq_open.restype = ctypes.c_int
    q = check(libc.mq_open(sys.argv[4].encode(), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None), "mq_open")
    os.close(q)
    print(shm)
elif cmd == "read":
    shm = check(libc.shmget(key, 0, 0), "shmget")
    addr = check(libc.shmat(shm, None, SHM_RDONLY), "shmat")
    print(ctypes.string_at(addr, int(sys.argv[3])).hex())
    libc.shmdt(addr)
elif cmd == "remove":
    for get, ctl in ((lambda: libc.shmget(key, 0, 0), lambda i: libc.shmctl(i, IPC_RMID, None)),
                     (lambda: libc.msgget(key, 0), lambda i: libc.msgctl(i, IPC_RMID, None)),
                     (lambda: libc.semget(key, 0, 0), lambda i: libc.semctl(i, 0, IPC_RMID))):
        i = get()
        if i >= 0:
            ctl(i)
    libc.mq_unlink(sys.argv[3].encode())
`;

/**
 * The host's IPC victims, owned by the principal's user, mode 0600: a SysV shm segment of 4096 bytes
 * holding `pattern`, a message queue and a semaphore set (all under one random key), and a POSIX
 * message queue of a random name. bytes() reads the segment back; remove() deletes them all.
 */
export class IpcVictims {
  readonly key = 0x10000000 + randomBytes(3).readUIntBE(0, 3);
  readonly mqueue = `/nbagent-victim-${randomBytes(6).toString("hex")}`;
  readonly pattern = `VICTIM-${randomBytes(8).toString("hex")}`;
  readonly shmid: number;

  constructor(readonly who: Who) {
    const out = this.helper(who, [
      "create",
      String(this.key),
      Buffer.from(this.pattern).toString("hex"),
      this.mqueue,
    ]);
    this.shmid = Number(out.trim());
  }

  private helper(who: Who, args: string[]): string {
    const ids = who === "nobody" ? { uid: NOBODY_UID, gid: NOBODY_UID } : {};
    return execFileSync(PYTHON, ["-c", IPC_HELPER, ...args], { encoding: "utf8", cwd: "/", ...ids });
  }

  /** The segment's first bytes, as the host reads them now. */
  bytes(): string {
    const hex = this.helper("root", ["read", String(this.key), String(this.pattern.length)]).trim();
    return Buffer.from(hex, "hex").toString("latin1");
  }

  remove(): void {
    this.helper(this.who, ["remove", String(this.key), this.mqueue]);
  }
}

/** `nbagent mcp --http` as the place's user, with clients that call the python tool. */
export class McpHttp {
  private constructor(
    readonly server: ChildProcess,
    readonly url: URL,
    private readonly exited: Promise<unknown>,
  ) {}

  static async start(place: Place): Promise<McpHttp> {
    const c = command(place, ["mcp", "--http", "--port", "0", "--cwd", place.cwd]);
    const server = spawn(c.file, c.argv, { cwd: place.cwd, env: c.env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    const exited = new Promise((resolve) => server.on("exit", resolve));
    const url = await new Promise<URL>((resolve, reject) => {
      server.stderr?.setEncoding("utf8").on("data", (d: string) => {
        err += d;
        const m = /listening on (\S+)/.exec(err);
        if (m) resolve(new URL(m[1]));
      });
      exited.then((code) => reject(new Error(`nbagent mcp --http exited (${code}): ${err}`)));
    });
    return new McpHttp(server, url, exited);
  }

  client(): Promise<Client> {
    return httpClient(this.url, { Authorization: `Bearer ${MCP_SECRET}` });
  }

  async stop(): Promise<void> {
    this.server.kill("SIGTERM");
    await this.exited;
  }
}

/** The python tool through an MCP client, as an Answer. */
export async function mcpPython(
  client: Client,
  code: string,
  params: Record<string, unknown> = {},
): Promise<Answer> {
  const json = await client.callTool({
    name: "python",
    arguments: { timeout: 120, ...params, cells: [{ code }] },
  });
  return { text: textOf(json), isError: json.isError === true, json };
}

/** The shared local gateway's server pid and folder for a state dir (exactly one must exist). */
export function localGateway(state: string): { pid: number; dir: string } {
  const root = join(state, "gateway");
  const dirs = readdirSync(root).filter((d) => existsSync(join(root, d, "info.json")));
  assert.equal(dirs.length, 1, `gateway dirs: ${readdirSync(root)}`);
  const dir = join(root, dirs[0]);
  const pid = JSON.parse(readFileSync(join(dir, "info.json"), "utf8")).pid as number;
  assert.ok(Number.isInteger(pid) && pid > 1, `info.json names pid ${pid}`);
  return { pid, dir };
}
