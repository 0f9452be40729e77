"""A PID namespace of its own for one kernel (docs/isolation.md).

Used by the kernel wrapper (watchdog.ts prepends this file to it) and by the fork server's children
(forkserver.py imports it). `enter()` is called in the process the host knows by pid (the "relay"):

- it unshares a PID and a mount namespace (as root directly, otherwise inside a new user namespace
  that maps the user to itself) and forks: the child is pid 1 of the new namespace and becomes the
  kernel, with a /proc of its own, so no process outside the namespace (the host, other sessions, any
  other process of the user) is visible to it, and everything it starts — even in a session of its
  own (setsid) — dies with it (the kernel ends the namespace when it exits);
- the relay stays outside: it reports what was achieved, forwards nothing (an interrupt sent to the
  relay's process group reaches the kernel directly), turns SIGTERM into SIGKILL of the kernel (pid 1
  of a namespace ignores signals it has no handler for) and exits the way the kernel exited.

When the namespace cannot be had (not Linux, unshare refused, /proc cannot be mounted), the caller
learns why and the kernel runs as before.
"""

import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1


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


def _mount_proc(libc):
    """In the namespace's pid 1: a private mount tree and a /proc that shows only this namespace."""
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return "cannot make the mount tree private (%s)" % _errno_text()
    if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        return "cannot mount a /proc of its own (%s)" % _errno_text()
    return None


def enter():
    """Returns (isolation, kernel_pid). In the kernel itself kernel_pid is None: carry on as the
    kernel. In the relay kernel_pid is the kernel's pid: call relay(kernel_pid, ...)."""
    if not sys.platform.startswith("linux"):
        return {"pidNamespace": False, "reason": "PID namespaces exist only on Linux"}, None
    try:
        libc = _libc()
    except Exception as err:
        return {"pidNamespace": False, "reason": "cannot load libc: %s" % err}, None
    reason = _unshare(libc)
    if reason:
        return {"pidNamespace": False, "reason": reason}, None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        problem = _mount_proc(libc)
        try:
            # Also the check that the relay is still there (else EPIPE: nobody to report to).
            os.write(w, (problem or "").encode() or b"\n")
            os.close(w)
        except OSError:
            os._exit(1)
        info = {"pidNamespace": problem is None, "via": "unshare"}
        if problem:
            info["reason"] = problem
        return info, None
    os.close(w)
    answer = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        answer += chunk
    os.close(r)
    problem = answer.decode(errors="replace").strip()
    info = {"pidNamespace": not problem and bool(answer), "via": "unshare"}
    if problem or not answer:
        info["reason"] = problem or "the kernel's namespace did not start"
    return info, pid


def relay(kernel, lifeline=None):
    """The relay's life: wait for the kernel and exit as it did. SIGTERM (to the relay or its group)
    kills the kernel; end of input on `lifeline` (the host's pipe) too. Never returns."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    import select

    watched = [r] + ([lifeline] if lifeline is not None else [])
    while True:
        try:
            pid, status = os.waitpid(kernel, os.WNOHANG)
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
                _kill(kernel)
        if lifeline is not None and lifeline in ready:
            try:
                data = os.read(lifeline, 512)
            except OSError:
                data = b""
            if not data:
                _kill(kernel)
                watched.remove(lifeline)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP: cannot be caught anyway
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
