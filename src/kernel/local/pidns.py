"""A PID namespace of its own for one kernel, with a real init and nothing to escape with
(docs/isolation.md).

Used by the kernel wrapper (watchdog.ts prepends this file to it), by the fork server's children
(forkserver.py imports it) and by the shared local gateway's kernelspec. `enter(confine)` is called in
the process the host knows by pid (the "relay"):

- it unshares a PID and a mount namespace (as root directly, otherwise inside a new user namespace
  that maps the user to itself) and forks: the child is pid 1 of the new namespace, the kernel's
  *init*. The init makes the namespace's filesystem view (`setup()`: a /proc of its own, read-only
  /proc/sys and /sys, a minimal /dev, nbagent's state hidden), drops every capability and installs a
  seccomp filter (`lock_down()`), then forks the kernel (pid 2) and stays: it reaps every orphan,
  forwards signals (SIGINT to the kernel's process group: interrupts) and, when the kernel ends, says
  how on the status pipe and exits — which ends everything else in the namespace;
- the relay stays outside: it reports what was achieved, turns SIGTERM into SIGKILL of the init (the
  whole namespace ends), and exits the way the kernel exited (its signal re-raised), so the host
  reports a kernel that killed itself with the signal it used.

When the namespace cannot be had (not Linux, unshare refused, /proc cannot be mounted), the caller
learns why and the kernel runs as before.
"""

import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# Root gets no capabilities back on execve or setuid (the *_LOCKED bits make that permanent).
SECUREBITS = 0x01 | 0x02 | 0x20 | 0x40 | 0x80  # NOROOT, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE
SYS_MOUNT_SETATTR = 442  # same number on x86_64 and aarch64
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 1

# The kernel's /proc: read-only where root may write the host's kernel settings (core_pattern,
# sysrq), empty where the host's processes or memory show through (docs/isolation.md).
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
PROC_MASKED = ("kcore", "keys", "timer_list", "sched_debug", "latency_stats", "timer_stats", "kallsyms",
               "config.gz", "kpageflags", "kpagecount", "kpagecgroup", "slabinfo", "iomem", "ioports",
               "vmallocinfo")
# Folders covered with an empty read-only one (Docker masks the same): devices and firmware tables,
# and the power meters (powercap) whose energy counters leak what other programs compute.
FOLDERS_MASKED = ("/proc/acpi", "/proc/asound", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap")
# What /dev holds for the kernel (bound from the host's), and devices passed through when present.
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_PASSED = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "kfd")


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _errno_text():
    import ctypes

    return os.strerror(ctypes.get_errno())


def _unshare(libc):
    """None once the next child will be pid 1 of a new PID namespace, else the reason why not."""
    if libc.unshare(CLONE_NEWPID | CLONE_NEWNS) == 0:
        return None
    plain = _errno_text()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS) != 0:
        return "unshare(CLONE_NEWPID) was refused (%s), also inside a user namespace (%s)" % (
            plain,
            _errno_text(),
        )
    # Map the user to itself, so files keep their owners and the kernel runs as the same user.
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("%d %d 1" % (uid, uid))
        with open("/proc/self/gid_map", "w") as f:
            f.write("%d %d 1" % (gid, gid))
    except OSError as err:
        # Too late to step back: the kernel would run unmapped. Rare enough to refuse outright.
        os.write(2, ("nbagent: cannot map the user namespace: %s\n" % err).encode())
        os._exit(1)
    return None


class _Refused(Exception):
    pass


def _mount(libc, source, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if isinstance(s, str) else s  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise _Refused("mount %s on %s: %s" % (fstype or source or "", target, _errno_text()))


def _read_only(libc, path, bind):
    """`path` (and every mount below it) read-only in this mount namespace."""
    if bind:
        _mount(libc, path, path, None, MS_BIND | MS_REC)
    import ctypes

    class MountAttr(ctypes.Structure):
        _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64), ("prop", ctypes.c_uint64),
                    ("userns", ctypes.c_uint64)]

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE, ctypes.byref(attr),
                    ctypes.sizeof(attr)) == 0:
        return
    # Before Linux 5.12: remount each mount below `path`, keeping the flags it has.
    for target in _mounts_below(path):
        st = os.statvfs(target)
        keep = st.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)


def _mounts_below(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            target = line.split(" ")[4].encode().decode("unicode_escape")
            if target == path or target.startswith(path.rstrip("/") + "/"):
                out.append(target)
    return sorted(set(out), key=len)


def _touch(path, directory):
    if directory:
        os.makedirs(path, mode=0o700, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))


def _bind_fd(libc, fd, target):
    _mount(libc, "/proc/self/fd/%d" % fd, target, None, MS_BIND | MS_REC)


def _minimal_dev(libc):
    """A fresh /dev: the harmless character devices, ptys, a private /dev/shm and GPUs — no disks."""
    keep = {}
    for name in DEV_NODES + DEV_PASSED + ("dri",):
        try:
            keep[name] = os.open("/dev/" + name, os.O_PATH | os.O_NOFOLLOW)
        except OSError:
            pass
    for name in os.listdir("/dev"):
        if name.startswith("nvidia") and name[6:].isdigit():
            keep[name] = os.open("/dev/" + name, os.O_PATH | os.O_NOFOLLOW)
    try:
        _mount(libc, "tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m")
        for name, fd in keep.items():
            _touch("/dev/" + name, os.path.isdir("/proc/self/fd/%d" % fd))
            _bind_fd(libc, fd, "/dev/" + name)
    finally:
        for fd in keep.values():
            os.close(fd)
    os.mkdir("/dev/pts", 0o755)
    try:
        _mount(libc, "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
        os.symlink("pts/ptmx", "/dev/ptmx")
    except _Refused:
        pass  # no ptys then (pty.openpty fails); everything else works
    os.mkdir("/dev/shm", 0o1777)
    # Sized (limits.py tmpfs_bytes: half the memory limit, else an eighth of the RAM), not the
    # default half of the RAM: its pages count in no process the out-of-memory killer could end.
    _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=%d" % tmpfs_bytes())
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, "/dev/" + name)


def _within(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hide(libc, hide, expose):
    """Covers each `hide` folder with an empty one and puts back each `expose` path that lies inside
    one, writable, at its own path. The working directory is put back too when it lies inside a
    hidden folder (it is the user's), and hidden folders inside what was put back are covered again.
    Ends with a chdir to the working directory's path: the cwd inherited from before the mounts would
    still lead, through "..", into what is hidden."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    hidden = []
    for path in hide:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in hidden:
            hidden.append(real)
    shown = []
    for path in list(expose) + ([cwd] if cwd else []):
        real = os.path.realpath(path)
        if real not in shown and any(_within(real, h) for h in hidden):
            shown.append(real)
    # A hidden folder that is put back whole (the working directory is the state directory) is not
    # covered at all: a recursive bind of it would bring the cover along (the cover is a mount at
    # that very path of the tree the bind copies), and the kernel would see an empty folder — no
    # connection file, so ipykernel picked ports of its own and never answered. The folders hidden
    # inside it are covered as usual.
    hidden = [h for h in hidden if h not in shown]
    # One pass from the top down: at equal depth a cover comes before a putting back.
    steps = sorted([(h.count("/"), 0, h) for h in hidden] + [(e.count("/"), 1, e) for e in shown])
    fds = {}
    try:
        for _, show, path in steps:
            if show:
                try:
                    fds[path] = os.open(path, os.O_PATH | os.O_NOFOLLOW)
                except OSError:
                    pass
        covered = []  # (path, True when covered / False when put back), in the order done
        visible = lambda p: next((not c for q, c in reversed(covered) if _within(p, q)), True)  # noqa: E731
        for _, show, path in steps:
            if not show and visible(path):
                _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=1m")
                covered.append((path, True))
            elif show and path in fds and not visible(path):
                _touch(path, os.path.isdir("/proc/self/fd/%d" % fds[path]))
                _bind_fd(libc, fds[path], path)
                covered.append((path, False))
    finally:
        for fd in fds.values():
            os.close(fd)
    if cwd:
        os.chdir(cwd)


def setup(libc, confine):
    """In the namespace's init: the kernel's view of the filesystem. None, or why it failed."""
    confine = confine or {}
    try:
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except _Refused as err:
        return "cannot mount a /proc of its own (%s)" % err
    try:
        for name in PROC_READ_ONLY:
            if os.path.exists("/proc/" + name):
                _read_only(libc, "/proc/" + name, bind=True)
        for name in PROC_MASKED:
            if os.path.exists("/proc/" + name):
                _mount(libc, "/dev/null", "/proc/" + name, None, MS_BIND)
        for path in FOLDERS_MASKED:
            if os.path.isdir(path):
                _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0")
        if os.path.isdir("/sys"):
            _read_only(libc, "/sys", bind=False)
        _minimal_dev(libc)
        _hide(libc, confine.get("hide") or [], confine.get("expose") or [])
    except (_Refused, OSError) as err:
        return "cannot confine the kernel (%s)" % err
    return None


# The seccomp filter, one row a system call: (name, x86_64 number, aarch64 number or None, errno).
# docs/isolation.md ("The seccomp filter") gives each row's reason and compares it with Docker's
# default profile; test/kernel/seccomp-table.unit.test.ts checks that the two lists stay the same.
EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
SECCOMP_DENIED = (
    # Namespaces and mounts: the view the init made stays as it is.
    ("mount", 165, 40, EPERM),
    ("umount2", 166, 39, EPERM),
    ("pivot_root", 155, 41, EPERM),
    ("chroot", 161, 51, EPERM),
    ("setns", 308, 268, EPERM),
    ("unshare", 272, 97, EPERM),
    ("open_tree", 428, 428, EPERM),
    ("move_mount", 429, 429, EPERM),
    ("fsopen", 430, 430, EPERM),
    ("fsconfig", 431, 431, EPERM),
    ("fsmount", 432, 432, EPERM),
    ("fspick", 433, 433, EPERM),
    ("mount_setattr", 442, 442, EPERM),
    # Code into the operating system's kernel, and its keys.
    ("init_module", 175, 105, EPERM),
    ("finit_module", 313, 273, EPERM),
    ("delete_module", 176, 106, EPERM),
    ("kexec_load", 246, 104, EPERM),
    ("kexec_file_load", 320, 294, EPERM),
    ("bpf", 321, 280, EPERM),
    ("perf_event_open", 298, 241, EPERM),
    ("userfaultfd", 323, 282, EPERM),
    ("keyctl", 250, 219, EPERM),
    ("add_key", 248, 217, EPERM),
    ("request_key", 249, 218, EPERM),
    ("uselib", 134, None, EPERM),
    ("open_by_handle_at", 304, 265, EPERM),
    ("name_to_handle_at", 303, 264, EPERM),
    # Other processes: the namespace's init (which holds the way to the host) and each other.
    ("ptrace", 101, 117, EPERM),
    ("process_vm_readv", 310, 270, EPERM),
    ("process_vm_writev", 311, 271, EPERM),
    ("kcmp", 312, 272, EPERM),
    ("pidfd_getfd", 438, 438, EPERM),
    ("pidfd_open", 434, 434, ENOSYS),
    # io_uring: a second system-call interface that seccomp cannot see into.
    ("io_uring_setup", 425, 425, EPERM),
    ("io_uring_enter", 426, 426, EPERM),
    ("io_uring_register", 427, 427, EPERM),
    # The machine's clock, log, swap, quotas, accounting and power.
    ("syslog", 103, 116, EPERM),
    ("acct", 163, 89, EPERM),
    ("quotactl", 179, 60, EPERM),
    ("quotactl_fd", 443, 443, EPERM),
    ("swapon", 167, 224, EPERM),
    ("swapoff", 168, 225, EPERM),
    ("reboot", 169, 142, EPERM),
    ("settimeofday", 164, 170, EPERM),
    ("clock_settime", 227, 112, EPERM),
    ("clock_adjtime", 305, 266, EPERM),
    ("adjtimex", 159, 171, EPERM),
    ("iopl", 172, None, EPERM),
    ("ioperm", 173, None, EPERM),
    ("lookup_dcookie", 212, 18, EPERM),
    ("vhangup", 153, 58, EPERM),
    ("_sysctl", 156, None, EPERM),
    ("sysfs", 139, None, EPERM),
    ("ustat", 136, None, EPERM),
)
# Checked by their arguments (docs/isolation.md): clone with a namespace flag (EPERM) and clone3
# (ENOSYS: libc falls back to clone); personality only with the values Docker allows (query, Linux,
# Linux32, UNAME26); socket only in the families a kernel uses: unix, IPv4, IPv6, and netlink's route
# protocol (glibc's getaddrinfo asks it for the host's addresses) — others fail with EAFNOSUPPORT.
SECCOMP_CLONE = ("clone", 56, 220)
SECCOMP_CLONE3 = ("clone3", 435, 435)
SECCOMP_PERSONALITY = ("personality", 135, 92)
PERSONALITY_ALLOWED = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
SECCOMP_SOCKET = ("socket", 41, 198)
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCKET_FAMILIES_ALLOWED = (AF_UNIX, AF_INET, AF_INET6)
NETLINK_ROUTE = 0


def _seccomp_program():
    """Classic BPF from the tables above; another architecture's system calls (x32, i386) fail too."""
    import platform
    import struct

    machine = platform.machine()
    if machine == "x86_64":
        arch, column, x32 = 0xC000003E, 1, True
    elif machine in ("aarch64", "arm64"):
        arch, column, x32 = 0xC00000B7, 2, False
    else:
        return None
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    ns_flags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    NR, ARG0, ARG2 = 0, 16, 32  # offsets in struct seccomp_data (low 32 bits: little-endian)
    prog = [(LD, 0, 0, 4)]  # arch
    prog.append((JEQ, 1, 0, arch))
    prog.append((RET, 0, 0, ERRNO | EPERM))
    prog.append((LD, 0, 0, NR))
    if x32:
        prog.append((JGE, 0, 1, 0x40000000))
        prog.append((RET, 0, 0, ERRNO | EPERM))
    for row in SECCOMP_DENIED:
        if row[column] is None:
            continue
        prog.append((JEQ, 0, 1, row[column]))
        prog.append((RET, 0, 0, ERRNO | row[3]))
    prog.append((JEQ, 0, 1, SECCOMP_CLONE3[column]))
    prog.append((RET, 0, 0, ERRNO | ENOSYS))
    # Each check below loads an argument, so each ends in a return: allowed or refused.
    prog.append((JEQ, 0, 4, SECCOMP_CLONE[column]))
    prog.append((LD, 0, 0, ARG0))  # clone's flags
    prog.append((JSET, 0, 1, ns_flags))
    prog.append((RET, 0, 0, ERRNO | EPERM))
    prog.append((RET, 0, 0, ALLOW))
    allowed = PERSONALITY_ALLOWED
    prog.append((JEQ, 0, 3 + len(allowed), SECCOMP_PERSONALITY[column]))
    prog.append((LD, 0, 0, ARG0))
    for i, value in enumerate(allowed):
        prog.append((JEQ, len(allowed) - i, 0, value))  # to the ALLOW after the EPERM
    prog.append((RET, 0, 0, ERRNO | EPERM))
    prog.append((RET, 0, 0, ALLOW))
    families = SOCKET_FAMILIES_ALLOWED
    prog.append((JEQ, 0, 6 + len(families), SECCOMP_SOCKET[column]))
    prog.append((LD, 0, 0, ARG0))  # the family
    for i, value in enumerate(families):
        prog.append((JEQ, len(families) + 3 - i, 0, value))  # to the last ALLOW
    prog.append((JEQ, 0, 2, AF_NETLINK))
    prog.append((LD, 0, 0, ARG2))  # netlink's protocol
    prog.append((JEQ, 1, 0, NETLINK_ROUTE))
    prog.append((RET, 0, 0, ERRNO | EAFNOSUPPORT))
    prog.append((RET, 0, 0, ALLOW))
    prog.append((RET, 0, 0, ALLOW))
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog), len(prog)


def lock_down(libc):
    """No capabilities, ever again, in this process and all it starts; and the seccomp filter.
    None, or why it failed (then the caller must not run the kernel)."""
    import ctypes

    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return "prctl(PR_SET_NO_NEW_PRIVS): %s" % _errno_text()
    libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0)  # refused without CAP_SETPCAP: bounding set is enough
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() not in (1, 22):
            return "prctl(PR_CAPBSET_DROP, %d): %s" % (cap, _errno_text())
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        return "capset: %s" % _errno_text()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("CapEff:", "CapPrm:", "CapBnd:")) and int(line.split()[1], 16) != 0:
                return "capabilities remain (%s)" % line.strip()
    program = _seccomp_program()
    if program is None:
        return None
    code, count = program
    buf = ctypes.create_string_buffer(code, len(code))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(count, ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return "seccomp filter refused: %s" % _errno_text()
    return None


def enter(confine=None):
    """Returns (isolation, init, status). In the kernel itself init is None: carry on as the kernel.
    In the relay `init` is the init's pid and `status` the read end of its status pipe: call
    relay(init, lifeline, status)."""
    if not sys.platform.startswith("linux"):
        return {"pidNamespace": False, "reason": "PID namespaces exist only on Linux"}, None, None
    try:
        libc = _libc()
    except Exception as err:
        return {"pidNamespace": False, "reason": "cannot load libc: %s" % err}, None, None
    reason = _unshare(libc)
    if reason:
        return {"pidNamespace": False, "reason": reason}, None, None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        return become_init(libc, confine, lambda info: os.write(w, (json_line(info)).encode()), w), None, None
    os.close(w)
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = os.read(r, 4096)
        if not chunk:
            break
        answer += chunk
    try:
        import json

        info = json.loads(answer.decode(errors="replace"))
    except ValueError:
        info = {"pidNamespace": False, "via": "unshare", "reason": "the kernel's namespace did not start"}
    return info, pid, r


def json_line(info):
    import json

    return json.dumps(info) + "\n"


def become_init(libc, confine, report, status_fd):
    """In pid 1 of a fresh PID namespace: a mount namespace of its own, set up (`setup`), privileges
    dropped (`lock_down`); `report(isolation)` says what was achieved; then forks the kernel and stays
    as its init, writing the kernel's end on `status_fd`. Returns the isolation only in the kernel."""
    try:
        os.setsid()  # the host's interrupts reach the init's group; the init forwards them
    except OSError:
        pass  # already a session leader (the fork server's child)
    problem = None
    confine = confine or {}
    applied = None
    # A mount namespace for the view below, and an IPC namespace: SysV shared memory, semaphores,
    # message queues and POSIX message queues of its own (the host's and other kernels' are out of
    # reach; multiprocessing's semaphores work inside).
    if libc.unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0:
        problem = "cannot unshare a mount and an IPC namespace (%s)" % _errno_text()
    else:
        if confine.get("limits"):
            # While the host's cgroups are still writable (setup makes /sys read-only); limits.py is
            # prepended to this file wherever it runs (watchdog.ts, forkserver.py).
            applied = apply_limits(confine["limits"], confine.get("id") or str(os.getpid()))
        # After joining the limits' groups: the kernel's /proc/self/cgroup starts at its own group.
        if libc.unshare(CLONE_NEWCGROUP) != 0:
            problem = "cannot confine the kernel (no cgroup namespace: %s)" % _errno_text()
        problem = setup(libc, confine) or problem
    info = {"pidNamespace": problem is None or "cannot confine" in problem, "via": "unshare"}
    if applied is not None:
        info["limits"] = applied
    locked = lock_down(libc)
    if locked is not None:
        # Never run a kernel that kept privileges: the host reports the reason as a failed start.
        os.write(2, ("nbagent: cannot drop the kernel's privileges: %s\n" % locked).encode())
        os._exit(1)
    info["confined"] = problem is None
    if problem:
        info["reason"] = problem
    try:
        report(info)
    except OSError:
        os._exit(1)  # nobody to report to
    # Signals that arrive before the init's loop is ready are held, then forwarded.
    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
    signal.pthread_sigmask(signal.SIG_BLOCK, forwarded + (signal.SIGCHLD,))
    # Not dumpable from here on: the kernel can neither ptrace the init nor open its descriptors
    # through /proc/1/fd or pidfd_getfd (the seccomp filter refuses those calls too). The kernel
    # becomes dumpable again for itself.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    kernel = os.fork()
    if kernel == 0:
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        os.close(status_fd)
        os.setsid()
        # ipykernel ends itself when its parent is pid 1 and JPY_PARENT_PID is set; here the parent
        # is the init, and the host's pid means nothing inside: the init and relay tie it to the host.
        os.environ.pop("JPY_PARENT_PID", None)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded + (signal.SIGCHLD,))
        return info
    # The init keeps nothing that leads out but its status pipe: the host's pipes (a fork server's
    # stdout, the relay's, a gateway's lifeline FIFO) and log files are the kernel's business only.
    status_fd = keep_only(status_fd)
    init_loop(kernel, status_fd, forwarded)


def keep_only(fd):
    """Closes every descriptor but `fd` (moved above 2 if needed) and puts /dev/null on 0, 1, 2.
    Returns `fd`'s number."""
    if fd <= 2:
        moved = os.dup(fd)  # the lowest free number above: 0–2 are open
        os.close(fd)
        fd = moved if moved > 2 else keep_only(moved)
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        if null != std:
            os.dup2(null, std)
    if null > 2 and null != fd:
        os.close(null)
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 20)  # close_range(2): one system call
    return fd


def init_loop(kernel, status_fd, forwarded):
    """The namespace's pid 1: reaps every process, forwards signals to the kernel (SIGINT to its
    process group), and when the kernel ends writes `signal N` or `exit N` to `status_fd` and exits."""
    import select

    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    for sig in forwarded + (signal.SIGCHLD,):
        signal.signal(sig, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, forwarded + (signal.SIGCHLD,))
    # The kernel is the leader of its own group once it calls setsid(); until then, its pid.
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                os._exit(1)
            if pid == 0:
                break
            if pid == kernel:
                if os.WIFSIGNALED(status):
                    line = "signal %d\n" % os.WTERMSIG(status)
                    code = 128 + os.WTERMSIG(status)
                else:
                    code = os.waitstatus_to_exitcode(status)
                    line = "exit %d\n" % code
                try:
                    os.write(status_fd, line.encode())
                except OSError:
                    pass
                os._exit(code & 0xFF)
        try:
            select.select([r], [], [])
            got = os.read(r, 512)
        except (InterruptedError, BlockingIOError):
            continue
        for sig in got:
            if sig == signal.SIGCHLD:
                continue
            if sig == signal.SIGINT:
                try:
                    os.killpg(kernel, sig)
                    continue
                except OSError:
                    pass
            try:
                os.kill(kernel, sig)
            except OSError:
                pass


def read_to_end(fd):
    """Every byte `fd` gives until its end (a pipe's writer closed it, or a file's end)."""
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


def read_status(fd):
    """The init's last word on the status pipe: ("signal", N), ("exit", N) or None."""
    data = b""
    try:
        os.set_blocking(fd, False)
        while True:
            chunk = os.read(fd, 512)
            if not chunk:
                break
            data += chunk
    except (BlockingIOError, OSError):
        pass
    for line in reversed(data.decode(errors="replace").split("\n")):
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("signal", "exit") and parts[1].lstrip("-").isdigit():
            return parts[0], int(parts[1])
    return None


def relay(init, lifeline=None, status=None):
    """The relay's life: wait for the init and exit as the kernel did. SIGTERM (to the relay or its
    group) kills the init, and so the namespace; end of input on `lifeline` (the host's pipe) too.
    Never returns."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    import select

    watched = [r] + ([lifeline] if lifeline is not None else [])
    while True:
        try:
            pid, wait_status = os.waitpid(init, os.WNOHANG)
        except ChildProcessError:
            os._exit(1)
        if pid:
            break
        try:
            ready = select.select(watched, [], [])[0]
        except InterruptedError:
            continue
        if r in ready:
            try:
                got = os.read(r, 512)
            except BlockingIOError:
                got = b""
            if signal.SIGTERM in got or signal.SIGHUP in got:
                _kill(init)
            elif signal.SIGINT in got:
                try:
                    os.kill(init, signal.SIGINT)  # the init passes it to the kernel's group
                except OSError:
                    pass
        if lifeline is not None and lifeline in ready:
            try:
                data = os.read(lifeline, 512)
            except OSError:
                data = b""
            if not data:
                _kill(init)
                watched.remove(lifeline)
    said = read_status(status) if status is not None else None
    if said is not None:
        exit_like(said)
    if os.WIFSIGNALED(wait_status):
        exit_like(("signal", os.WTERMSIG(wait_status)))
    os._exit(os.waitstatus_to_exitcode(wait_status))


def exit_like(said):
    """Ends this process as the kernel ended: by its signal (re-raised) or with its exit code."""
    kind, n = said
    if kind == "signal":
        try:
            signal.signal(n, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP: cannot be caught anyway
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [n])
        if n == signal.SIGABRT or n == signal.SIGSEGV:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the relay
        os.kill(os.getpid(), n)
        os._exit(128 + n)
    os._exit(n & 0xFF)


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
