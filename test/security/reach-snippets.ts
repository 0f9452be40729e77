/**
 * Issue 29's attacks (reach.test.ts), as Python a model could write in a kernel: reaching the host
 * through the namespace's init (the fork server's pipe, the lifeline), other kernels' ZeroMQ sockets
 * on loopback or unix sockets, the host's SysV/POSIX IPC, and kernel interfaces a kernel has no use
 * for. Each prints `ATTACK <name>: blocked …` or `ATTACK <name>: ESCAPED …` (harness.ts); a probe
 * that raises prints no verdict, which the tests count as a failure.
 *
 * What the attacks may touch when they work: only the victims the test made for them (a `sleep` the
 * test started, a SysV segment and queues the test created, an mqueue of the test's name), the
 * kernel's own namespace init (a ptrace attach is detached again, memory is only read), and other
 * kernels' IOPub streams (only read). Forged fork-server lines name only the test's victim pid,
 * never pid <= 1.
 */
import { hidden } from "./snippets.js";

const PRELUDE = `
import ctypes, errno, os, platform, stat, sys, time
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
def verdict(name, escaped, detail=""):
    print("ATTACK %s: %s %s" % (name, "ESCAPED" if escaped else "blocked", detail), flush=True)
def err(n=None):
    n = ctypes.get_errno() if n is None else n
    return errno.errorcode.get(n, str(n))
NR = {
    "x86_64": {"pidfd_open": 434, "pidfd_getfd": 438, "kcmp": 312, "process_vm_readv": 310, "io_uring_setup": 425},
    "aarch64": {"pidfd_open": 434, "pidfd_getfd": 438, "kcmp": 272, "process_vm_readv": 270, "io_uring_setup": 425},
}[platform.machine()]
def sys_call(name, *args):
    ctypes.set_errno(0)
    return _libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
def kind(fd):
    m = stat.S_IFMT(os.fstat(fd).st_mode)
    return {stat.S_IFSOCK: "socket", stat.S_IFIFO: "pipe", stat.S_IFCHR: "chardev", stat.S_IFREG: "file"}.get(m, oct(m))
`;

export interface ForkServerPipeOptions {
  /** The pid (and process group) of the test's own victim process; never <= 1. */
  victim: number;
  /** Inodes of the fork server's stdin, stdout and stderr (the host's side reads its stdout). */
  hostInodes: number[];
  /** The forging thread stops once this file exists (the test makes it). */
  stopFile: string;
}

/**
 * 1. From a forked kernel: borrow the namespace init's descriptors (pidfd_getfd, /proc/1/fd), and
 * through any that leads to the fork server's pipes, forge `{"exit": victim}` and, in a thread that
 * goes on until the stop file exists, `{"id": k, "pid": victim}` for k = 1..50 (the next fork
 * request the host sends gets the victim's pid). Also ptrace, process_vm_readv and kcmp against the
 * init. Prints `FORKED-KERNEL …` (what the kernel sees of its init) for the test's message.
 */
export function forkServerPipe(o: ForkServerPipeOptions): string {
  if (!Number.isInteger(o.victim) || o.victim <= 1) throw new Error(`refusing victim pid ${o.victim}`);
  return `${PRELUDE}
import threading
VICTIM = ${o.victim}
assert VICTIM > 1
HOST_INODES = set(${JSON.stringify(o.hostInodes)})
STOP = ${JSON.stringify(o.stopFile)}
try:
    init_cmd = open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ")[:100]
except OSError as e:
    init_cmd = err(e.errno)
print("FORKED-KERNEL pid %d, init %r" % (os.getpid(), init_cmd), flush=True)

host_fds = []  # (how, fd): descriptors that lead to the fork server's pipes
pfd = sys_call("pidfd_open", 1, 0)
if pfd < 0:
    verdict("pidfd-getfd-init", False, "pidfd_open(1): " + err())
else:
    borrowed, refused = [], set()
    for n in range(64):
        fd = sys_call("pidfd_getfd", pfd, n, 0)
        if fd < 0:
            if ctypes.get_errno() != errno.EBADF:
                refused.add(err())
            continue
        st = os.fstat(fd)
        borrowed.append("%d:%s:%d" % (n, kind(fd), st.st_ino))
        if st.st_ino in HOST_INODES and kind(fd) in ("socket", "pipe"):
            host_fds.append(("pidfd_getfd(init, %d)" % n, fd))
        else:
            os.close(fd)
    os.close(pfd)
    verdict("pidfd-getfd-init", bool(borrowed), "borrowed the init's fds %s; refused %s" % (borrowed, sorted(refused)))

opened, refused = [], []
for n in range(3):
    try:
        fd = os.open("/proc/1/fd/%d" % n, os.O_WRONLY)
    except OSError as e:
        refused.append("%d:%s" % (n, err(e.errno)))
        continue
    k = kind(fd)
    if k != "chardev":
        opened.append("%d:%s" % (n, k))
    if os.fstat(fd).st_ino in HOST_INODES and k in ("socket", "pipe"):
        host_fds.append(("open(/proc/1/fd/%d)" % n, fd))
    else:
        os.close(fd)
verdict("proc-fd-open-init", bool(opened), "opened for writing %s; refused %s" % (opened, refused))

EXIT = b'{"exit":%d,"signal":"SIGKILL"}\\n' % VICTIM
IDS = b"".join(b'{"id":%d,"pid":%d}\\n' % (k, VICTIM) for k in range(1, 51))
written = []
for how, fd in host_fds:
    try:
        os.write(fd, EXIT)
        written.append(how)
    except OSError as e:
        pass
verdict("forkserver-pipe", bool(written), "forged lines for pid %d written through %s (of %d host-facing fds; the host side is %s)" % (VICTIM, written, len(host_fds), sorted(HOST_INODES)))

def forge():
    # As fast as the host reads: its buffer always holds forged lines ahead of a real reply.
    deadline = time.monotonic() + 180
    while not os.path.exists(STOP) and time.monotonic() < deadline:
        for how, fd in host_fds:
            try:
                os.write(fd, IDS + EXIT)
            except OSError:
                time.sleep(0.01)
    for how, fd in host_fds:
        os.close(fd)
if host_fds:
    threading.Thread(target=forge, daemon=True).start()

PTRACE_ATTACH, PTRACE_DETACH, WALL = 16, 17, 0x40000000
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
ctypes.set_errno(0)
rc = _libc.ptrace(PTRACE_ATTACH, 1, None, None)
detail = err()
if rc == 0:
    detail = "attached to the init"
    for _ in range(250):  # the attach stops the init; wait for that, then let it go
        try:
            pid, _st = os.waitpid(1, os.WNOHANG | WALL)
        except ChildProcessError:
            break
        if pid:
            break
        time.sleep(0.02)
    if _libc.ptrace(PTRACE_DETACH, 1, None, None) != 0:
        detail += "; detach failed: " + err()
verdict("ptrace-init", rc == 0, detail)

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(16)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iovec(id(sys), 16)  # the init is forked from the same image: the address is mapped there too
n = sys_call("process_vm_readv", 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
e = ctypes.get_errno()
verdict("process-vm-readv-init", n >= 0 or e == errno.EFAULT,
        "read %d bytes of the init's memory" % n if n >= 0 else err(e))

KCMP_VM = 1
rc = sys_call("kcmp", os.getpid(), 1, KCMP_VM, 0, 0)
verdict("kcmp-init", rc >= 0, "kcmp returned %d" % rc if rc >= 0 else err())
`;
}

export interface SnoopOptions {
  /** The victim's marker (hidden in the source: the attacker's own execute_input must not hold it). */
  marker: string;
  /** Subscriptions end once this file exists (the test makes it when the victim is done). */
  stopFile: string;
}

/**
 * 2. Loopback IOPub snooping: SUBscribe (to everything) to every listening TCP port on loopback or
 * any address (/proc/net/tcp, tcp6) and every listening unix socket (/proc/net/unix: paths and
 * abstract names) but the kernel's own, then collect messages until the stop file exists. Prints
 * `SUBSCRIBED n` once the sockets are connected (the test starts the victim then).
 */
export function snoopIopub(o: SnoopOptions): string {
  return `${PRELUDE}
import json
MARKER = ${hidden(o.marker)}
STOP = ${JSON.stringify(o.stopFile)}
try:
    import zmq
except ImportError as e:
    zmq = None
own_ports, own_paths = set(), set()
try:
    from ipykernel.connect import get_connection_file
    with open(get_connection_file()) as f:
        info = json.load(f)
    for k, v in info.items():
        if k.endswith("_port") and v:
            own_ports.add(int(v))
    if info.get("transport") == "ipc":
        base = info.get("ip", "")
        own_paths.update("%s-%s" % (base, info[k]) for k in info if k.endswith("_port"))
except Exception:
    pass
LOOPBACK4 = ("0100007F", "00000000")
LOOPBACK6 = ("00000000000000000000000001000000", "00000000000000000000000000000000", "0000000000000000FFFF00000100007F")
ports, errors = set(), []
for path, loop in (("/proc/net/tcp", LOOPBACK4), ("/proc/net/tcp6", LOOPBACK6)):
    try:
        lines = open(path).read().splitlines()[1:]
    except OSError as e:
        errors.append("%s: %s" % (path, err(e.errno)))
        continue
    for line in lines:
        parts = line.split()
        addr, port = parts[1].split(":")
        if parts[3] == "0A" and addr in loop and int(port, 16) not in own_ports:
            ports.add(int(port, 16))
paths = set()
try:
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        parts = line.split()
        # listening (__SO_ACCEPTCON) stream sockets with a name
        if len(parts) >= 8 and int(parts[3], 16) & 0x10000 and parts[4] == "0001":
            if parts[7] not in own_paths:
                paths.add(parts[7])
except OSError as e:
    errors.append("/proc/net/unix: " + err(e.errno))
if zmq is None:
    print("PROBE-ERROR no pyzmq", flush=True)
ctx = zmq.Context()
poller = zmq.Poller()
subs = []
for endpoint in ["tcp://127.0.0.1:%d" % p for p in sorted(ports)[:400]] + ["ipc://" + p for p in sorted(paths)[:200]]:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    try:
        s.connect(endpoint)
    except zmq.ZMQError as e:
        errors.append("%s: %s" % (endpoint, e))
        s.close()
        continue
    subs.append((endpoint, s))
    poller.register(s, zmq.POLLIN)
print("SUBSCRIBED %d (%d tcp ports, %d unix sockets; %s)" % (len(subs), len(ports), len(paths), errors[:3]), flush=True)
seen, kinds, frames = set(), {}, 0
deadline = time.monotonic() + 180
stopping = None
while time.monotonic() < deadline:
    if stopping is None and os.path.exists(STOP):
        stopping = time.monotonic()
    if stopping is not None and time.monotonic() - stopping > 1:  # in-flight messages drain
        break
    for s, _ in poller.poll(100):
        try:
            msg = s.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError:
            continue
        frames += 1
        endpoint = [e for e, x in subs if x is s][0]
        if any(MARKER in f for f in msg):
            seen.add(endpoint)
        for f in msg:
            if f.startswith(b"{") and b'"msg_type"' in f:
                try:
                    t = json.loads(f).get("msg_type")
                except ValueError:
                    continue
                kinds[t] = kinds.get(t, 0) + 1
                break
for _, s in subs:
    s.close()
ctx.term()
other = {k: v for k, v in kinds.items() if k in ("execute_input", "stream", "execute_result", "display_data", "error")}
verdict("iopub-snoop", bool(seen) or bool(other),
        "the victim's marker through %s; other kernels' messages %s; %d messages from %d endpoints" % (sorted(seen), other, frames, len(subs)))
`;
}

/** The victim of the snooping: prints its marker 60 times over about 3 s (subscribers join late). */
export function victimPrints(marker: string): string {
  return `import time
for i in range(60):
    print(${JSON.stringify(marker)}, i, flush=True)
    time.sleep(0.05)
print("victim done")`;
}

/**
 * 3. The lifeline: the init's fd 0 (the gateway's lifeline FIFO) opened for writing through
 * /proc/1/fd/0 and borrowed with pidfd_getfd, both held in a thread for the kernel's life, so the
 * FIFO never reaches end of input when the gateway dies.
 */
export function holdLifeline(): string {
  return `${PRELUDE}
import threading
held = []
try:
    fd = os.open("/proc/1/fd/0", os.O_WRONLY | os.O_NONBLOCK)
    held.append(fd)
    verdict("lifeline-open", kind(fd) == "pipe", "opened the init's fd 0 for writing (%s)" % kind(fd))
except OSError as e:
    verdict("lifeline-open", False, err(e.errno))
pfd = sys_call("pidfd_open", 1, 0)
if pfd < 0:
    verdict("lifeline-getfd", False, "pidfd_open(1): " + err())
else:
    fd = sys_call("pidfd_getfd", pfd, 0, 0)
    if fd < 0:
        verdict("lifeline-getfd", False, "pidfd_getfd(init, 0): " + err())
    else:
        held.append(fd)
        verdict("lifeline-getfd", kind(fd) == "pipe", "borrowed the init's fd 0 (%s)" % kind(fd))
    os.close(pfd)
_hold = threading.Event()
threading.Thread(target=_hold.wait, daemon=True, name="lifeline-holder").start()
print("HOLDING", len(held), flush=True)
`;
}

export interface IpcOptions {
  /** The SysV key of the victim's shm segment, message queue and semaphore set. */
  key: number;
  /** The victim's POSIX message queue ("/name"). */
  mqueue: string;
  /** What the kernel writes into the victim segment when it can. */
  pattern: string;
  /** The host's IPC and cgroup namespaces (readlink of /proc/self/ns/ipc, cgroup). */
  hostIpcNs: string;
}

/**
 * 4. The host's IPC: every segment of /proc/sysvipc/shm attached (read-only, the victim's
 * read-write: the pattern is written into it), the victim's message queue and semaphore set by key,
 * the victim's POSIX message queue by name, and the IPC namespace compared with the host's.
 */
export function hostIpc(o: IpcOptions): string {
  return `${PRELUDE}
KEY = ${o.key}
MQ = ${JSON.stringify(o.mqueue)}.encode()
PATTERN = ${JSON.stringify(o.pattern)}.encode()
SHM_RDONLY, IPC_CREAT = 0o10000, 0o1000
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]
try:
    ns = os.readlink("/proc/self/ns/ipc")
except OSError as e:
    ns = err(e.errno)
verdict("ipc-namespace", ns == ${JSON.stringify(o.hostIpcNs)}, "the kernel's IPC namespace is %s" % ns)
rows, listed = [], "listed"
try:
    for line in open("/proc/sysvipc/shm").read().splitlines()[1:]:
        p = line.split()
        rows.append((int(p[0]), int(p[1])))  # key, shmid
except OSError as e:
    listed = err(e.errno)
ids = {shmid for key, shmid in rows}
victim_id = _libc.shmget(KEY, 0, 0)
if victim_id >= 0:
    ids.add(victim_id)
attached, wrote = [], False
for shmid in sorted(ids):
    mine = shmid == victim_id
    addr = _libc.shmat(shmid, None, 0 if mine else SHM_RDONLY)
    if addr in (None, ctypes.c_void_p(-1).value):
        continue
    attached.append(shmid)
    if mine:
        ctypes.memmove(addr, PATTERN, len(PATTERN))
        wrote = True
    _libc.shmdt(addr)
verdict("sysv-shm", victim_id >= 0 or bool(attached),
        "%d segments %s; the victim's key gives id %d; attached %s; wrote the victim: %s" % (len(rows), listed, victim_id, attached, wrote))
mq = _libc.msgget(KEY, 0)
e = err()
verdict("sysv-msg", mq >= 0, "msgget(victim key) = %d" % mq if mq >= 0 else e)
sem = _libc.semget(KEY, 0, 0)
e = err()
verdict("sysv-sem", sem >= 0, "semget(victim key) = %d" % sem if sem >= 0 else e)
try:
    mq_open = _libc.mq_open
except AttributeError:
    mq_open = ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.restype = ctypes.c_int
ctypes.set_errno(0)
q = mq_open(MQ, os.O_RDWR)
e = err()
if q >= 0:
    os.close(q)
verdict("posix-mqueue", q >= 0, "opened the victim's queue %s" % MQ.decode() if q >= 0 else e)
`;
}

export interface KernelSurfaceOptions {
  /** The host's cgroup namespace (readlink of /proc/self/ns/cgroup). */
  hostCgroupNs: string;
  /** Paths no /proc/<pid>/cmdline the kernel sees may contain (the state dir). */
  secretPaths: string[];
}

/** The names kernelSurface prints. */
export const SURFACE_NAMES = [
  "io-uring",
  "personality-0x40000",
  "personality-0x400000",
  "personality-0x200000",
  "netlink-audit",
  "netlink-uevent",
  "af-vsock",
  "proc-config.gz",
  "proc-kpageflags",
  "proc-kpagecount",
  "proc-slabinfo",
  "proc-iomem",
  "proc-ioports",
  "proc-kallsyms",
  "cgroup-namespace",
  "cmdline-confine",
];

/**
 * 5. Kernel interfaces a kernel has no use for: io_uring_setup, personality flags Docker refuses
 * (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT; each restored at once), netlink audit
 * and uevent sockets, AF_VSOCK; /proc files Docker masks; the cgroup namespace; and every
 * /proc/<pid>/cmdline the kernel sees searched for `--confine=` and the state dir (beyond the `-f`
 * connection file Jupyter puts on every kernel's command line). A legit line:
 * NETLINK_ROUTE opens and getaddrinfo answers (`LEGIT netlink-route: ok …`).
 */
export function kernelSurface(o: KernelSurfaceOptions): string {
  return `${PRELUDE}
import socket
params = ctypes.create_string_buffer(120)
fd = sys_call("io_uring_setup", 4, params)
if fd >= 0:
    os.close(fd)
verdict("io-uring", fd >= 0, "io_uring_setup gave fd %d" % fd if fd >= 0 else err())
_libc.personality.restype = ctypes.c_int
_libc.personality.argtypes = [ctypes.c_ulong]
current = _libc.personality(0xFFFFFFFF)
for flag in (0x0040000, 0x0400000, 0x0200000):
    ctypes.set_errno(0)
    rc = _libc.personality(current | flag)
    e = err()
    now = _libc.personality(0xFFFFFFFF)
    took = rc != -1 and now & flag == flag
    _libc.personality(current)
    verdict("personality-%#x" % flag, took, "personality is now %#x" % now if took else "refused: %s (now %#x)" % (e, now))
for name, proto in (("netlink-audit", 9), ("netlink-uevent", 15)):
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
        s.close()
        verdict(name, True, "socket(AF_NETLINK, SOCK_RAW, %d) opened" % proto)
    except OSError as e:
        verdict(name, False, err(e.errno))
try:
    s = socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK
    s.close()
    verdict("af-vsock", True, "socket(AF_VSOCK) opened")
except OSError as e:
    verdict("af-vsock", False, err(e.errno))
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.close()
    print("LEGIT netlink-route: ok %d addresses for localhost" % len(socket.getaddrinfo("localhost", 80)), flush=True)
except OSError as e:
    print("LEGIT netlink-route: FAILED %s" % err(e.errno), flush=True)
for name in ("config.gz", "kpageflags", "kpagecount", "slabinfo", "iomem", "ioports", "kallsyms"):
    try:
        with open("/proc/" + name, "rb") as f:
            data = f.read(4096)
        verdict("proc-" + name, len(data) > 0, "read %d bytes" % len(data))
    except OSError as e:
        verdict("proc-" + name, False, err(e.errno))
try:
    ns = os.readlink("/proc/self/ns/cgroup")
except OSError as e:
    ns = err(e.errno)
try:
    cg = open("/proc/self/cgroup").read().split()
except OSError as e:
    cg = [err(e.errno)]
verdict("cgroup-namespace", ns == ${JSON.stringify(o.hostCgroupNs)}, "namespace %s; /proc/self/cgroup %s" % (ns, cg[:3]))
SECRETS = [${o.secretPaths.map(hidden).join(", ")}]
hits, seen = [], 0
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        with open("/proc/%s/cmdline" % p, "rb") as f:
            args = f.read().split(b"\\0")
    except OSError:
        continue
    seen += 1
    # What Jupyter puts on every kernel's command line is allowed: "-f <its connection file>" (and
    # the gateway kernelspec's "--confine-file=<file>"); the confinement's settings are not.
    kept = [a for i, a in enumerate(args) if not (i > 0 and args[i - 1] == b"-f") and not a.startswith(b"--confine-file=")]
    data = b"\\0".join(kept)
    why = [w for w in [b"--confine="] + SECRETS if w in data]
    if why:
        hits.append("%s (%s)" % (p, "--confine=" if why[0] == b"--confine=" else "the state dir"))
verdict("cmdline-confine", bool(hits), "of %d processes, %s" % (seen, hits[:4]))
`;
}
