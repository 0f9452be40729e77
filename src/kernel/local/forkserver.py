"""A pre-warmed fork server ("zygote") for local ipykernel kernels.

Started once per (interpreter, startup environment) by nbagent's local backend. It imports
ipykernel's kernel application once, then serves JSON-line requests on stdin:

    {"id": 1, "connection_file": "...", "cwd": "...", "env": {...}, "module": "ipykernel_launcher",
     "args": ["-f", "..."], "log": "..."}

For each request it forks. The child becomes the kernel exactly as `python -m <module> <args>`
would run it (own session and process group, the given cwd and environment, stdin from /dev/null,
stdout/stderr into the request's log file), so every kernel is a real, separate ipykernel process
that starts without paying for the imports again. With "pidns": true the kernel gets a PID namespace of
its own (docs/isolation.md). Where the server may (root): it unshares the namespace for its next child
just before the fork and steps back right after, so the forked child itself is pid 1 there ("direct",
no extra fork). Otherwise the forked child stays outside as the kernel's relay and forks the kernel
into a new user + PID namespace (pidns.py). Either way the child that knows the outcome reports
{"isolation": <host pid>, "info": {...}, "relay": bool} on stdout.
The server is started with the minimum environment (what keys it), since a forked kernel's
/proc/self/environ shows the server's. The server answers {"id", "pid"} (or
{"id", "error"}) on stdout, reports {"exit": pid, "code"|"signal"} when a kernel ends, and when its
stdin reaches EOF (the host is gone, however it went) or it gets SIGTERM it ends every kernel's
process group and exits. Kernels die with the server (PR_SET_PDEATHSIG).

Nothing here may start a thread, a zmq context or an asyncio loop before a fork: each fork checks.
"""

import errno
import json
import os
import signal
import sys
import traceback

# `python forkserver.py` puts this file's directory first on sys.path; a kernel never sees it
# (ipykernel_launcher drops the cwd while importing; IPython adds '' back itself).
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

# How a kernel ends, shared with the direct launcher (endkernel.py, beside this file): read now,
# while this file's folder is still reachable.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "endkernel.py")) as _end_file:
    exec(compile(_end_file.read(), _end_file.name, "exec"))
del _end_file

SERVER_PID = os.getpid()
MAX_FD = 1 << 20
PR_SET_PDEATHSIG = 1


def _load_pidns():
    """limits.py and pidns.py as one module (pidns calls limits' apply_limits), as the wrapper has them."""
    import types

    module = types.ModuleType("_nbagent_pidns")
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("limits.py", "pidns.py"):
        path = os.path.join(here, name)
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), module.__dict__)
    return module


pidns = _load_pidns()


def _warm():
    """Imports a kernel needs anyway (no user libraries: numpy/matplotlib stay per kernel)."""
    import ctypes  # noqa: F401  (prctl in the child)
    import faulthandler  # noqa: F401  (enabled by the kernel app)
    import sqlite3  # noqa: F401  (IPython history)

    import_ipykernel()  # without debugpy (endkernel.py)
    import ipykernel.kernelapp  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.zmqshell  # noqa: F401
    import ipykernel.comm  # noqa: F401
    import IPython.core.interactiveshell  # noqa: F401
    import IPython.core.completer  # noqa: F401
    import IPython.core.completerlib  # noqa: F401
    import jupyter_client.session  # noqa: F401

    for optional in ("comm", "ipykernel.eventloops", "ipykernel.inprocess.socket", "jedi.api"):
        try:
            __import__(optional)
        except Exception:
            pass
    try:
        # A kernel's first traceback costs a quarter second or more (seconds on a loaded machine),
        # delaying its first error and interrupt: stack_data parses interactiveshell.py (the frame
        # every cell runs under) and pygments compiles its Python lexer's ~80 regexes. Both are
        # cached per process: fill the caches here, and every forked kernel inherits them.
        import IPython.core.interactiveshell as shell
        import stack_data
        from IPython.core.ultratb import VerboseTB

        stack_data.Source.for_filename(shell.__file__)
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            VerboseTB(color_scheme="Linux").structured_traceback(*sys.exc_info())
    except Exception:
        pass


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except Exception:
        return None


def ctypes_errno():
    import ctypes

    return ctypes.get_errno()


def _write(line):
    data = (json.dumps(line) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def _safe_to_fork():
    import threading

    if threading.active_count() != 1:
        return "the fork server has %d threads" % threading.active_count()
    zmq = sys.modules.get("zmq")
    if zmq is not None and getattr(zmq.Context, "_instance", None) is not None:
        return "the fork server holds a zmq context"
    asyncio_events = sys.modules.get("asyncio.events")
    if asyncio_events is not None and asyncio_events._get_running_loop() is not None:
        return "the fork server runs an asyncio loop"
    return None


class Server:
    def __init__(self):
        self.children = set()
        self.direct = set()  # children that are pid 1 (the init) of their namespace
        self.status = {}  # child pid -> read end of its status pipe (an init says how its kernel ended)
        self.libc = _libc()
        # None: not tried yet; else whether the server can unshare a PID namespace for its children.
        self.can_unshare = None
        self.own_pidns = None
        # Never written: a child that finds it at EOF knows the server died before its PR_SET_PDEATHSIG.
        self.life_r, self.life_w = os.pipe()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        # A Python-level handler (not SIG_DFL/SIG_IGN) so the wakeup fd fires for these signals.
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def serve(self):
        """Returns a request only in a forked child (which then becomes the kernel)."""
        import select

        buf = b""
        while True:
            ready, _, _ = select.select([0, self.wake_r], [], [])
            if self.wake_r in ready:
                try:
                    signals = os.read(self.wake_r, 512)
                except BlockingIOError:
                    signals = b""
                self.reap()
                if signal.SIGTERM in signals:
                    self.shutdown()
            if 0 in ready:
                try:
                    chunk = os.read(0, 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    self.shutdown()
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    child_request = self.handle(line)
                    if child_request is not None:
                        return child_request

    def handle(self, line):
        try:
            req = json.loads(line)
            rid = req["id"]
        except Exception as err:
            self.reply({"error": "bad request: %s" % err})
            return None
        problem = _safe_to_fork()
        if problem:
            self.reply({"id": rid, "error": problem})
            return None
        try:
            log_fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except (OSError, KeyError) as err:
            self.reply({"id": rid, "error": "cannot open the kernel log: %s" % err})
            return None
        direct = bool(req.get("pidns")) and self.unshare_for_child()
        status_r, status_w = os.pipe()  # the init's last word: how the kernel ended
        try:
            pid = os.fork()
        except OSError as err:
            os.close(log_fd)
            os.close(status_r)
            os.close(status_w)
            self.reply({"id": rid, "error": "fork failed: %s" % err})
            return None
        finally:
            if direct and os.getpid() == SERVER_PID:
                self.step_back()
        if pid == 0:
            os.close(status_r)
            try:
                self.become_child(req, log_fd, status_w, direct)
            except BaseException:
                try:
                    os.write(2, traceback.format_exc().encode())
                finally:
                    os._exit(127)
            return req
        os.close(log_fd)
        os.close(status_w)
        self.status[pid] = status_r
        self.children.add(pid)
        if direct:
            self.direct.add(pid)
        self.reply({"id": rid, "pid": pid})
        return None

    def unshare_for_child(self):
        """Makes the next fork's child pid 1 of a new PID namespace; False when not allowed here."""
        if self.can_unshare is False or self.libc is None:
            return False
        try:
            if self.own_pidns is None:
                self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY)
            ok = self.libc.unshare(pidns.CLONE_NEWPID) == 0
        except OSError:
            ok = False
        self.can_unshare = ok
        return ok

    def step_back(self):
        """The server's own later children are born in its own namespace again."""
        if self.libc.setns(self.own_pidns, pidns.CLONE_NEWPID) != 0:
            os.write(2, b"nbagent fork server: cannot return to its own PID namespace\n")
            os._exit(1)

    def become_child(self, req, log_fd, status_w, direct=False):
        os.setsid()
        os.close(self.life_w)
        if self.libc is not None:
            self.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        import select

        if select.select([self.life_r], [], [], 0)[0]:  # the server died before prctl took effect
            os._exit(1)
        os.close(self.life_r)
        if self.own_pidns is not None:
            os.close(self.own_pidns)
        for fd in self.status.values():
            os.close(fd)
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        confine = req.get("confine")
        # In the kernel's working directory before its view of the filesystem is made: the view puts
        # the working directory back when it lies in (or is) a hidden folder, and reads it from here.
        os.chdir(req["cwd"])
        if direct:
            me = int(os.readlink("/proc/self"))  # the host's pid for it (before /proc is its own)

            def report(info):
                os.write(1, (json.dumps({"isolation": me, "info": info, "relay": False}) + "\n").encode())

            pidns.become_init(self.libc, confine, report, status_w)
        elif req.get("pidns"):
            os.close(status_w)
            info, init, status = pidns.enter(confine)
            if init is not None or "via" not in info:
                # The relay (or the kernel itself, when there is no namespace) reports to the host.
                me = os.getpid()
                os.write(1, (json.dumps({"isolation": me, "info": info, "relay": init is not None}) + "\n").encode())
            if init is not None:
                os.dup2(log_fd, 1)
                os.dup2(log_fd, 2)
                os.close(log_fd)
                pidns.relay(init, None, status)
        else:
            os.close(status_w)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        # The kernel starts with stdin, its log and nothing else of the server's.
        os.closerange(3, MAX_FD)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        if req.get("pidns"):
            os.environ.pop("JPY_PARENT_PID", None)  # see pidns.become_init
        try:
            import time

            time.tzset()
        except Exception:
            pass
        self.children.clear()
        self.direct.clear()
        self.status.clear()

    def reap(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.direct.discard(pid)
            said = None
            fd = self.status.pop(pid, None)
            if fd is not None:
                said = pidns.read_status(fd)
                os.close(fd)
            try:
                os.killpg(pid, signal.SIGKILL)  # sweep what the kernel left in its group
            except OSError:
                pass
            if said is None and os.WIFSIGNALED(status):
                said = ("signal", os.WTERMSIG(status))
            if said is not None and said[0] == "signal":
                self.reply({"exit": pid, "signal": signal.Signals(said[1]).name})
            elif said is not None:
                self.reply({"exit": pid, "code": said[1]})
            else:
                self.reply({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    def reply(self, line):
        try:
            _write(line)
        except OSError as err:
            if err.errno in (errno.EPIPE, errno.EBADF):
                self.shutdown()
            raise

    def shutdown(self):
        """Ends every kernel's process group (SIGTERM, then SIGKILL after 1 s) and exits."""
        import time

        for pid in self.children:
            # pid 1 of a namespace ignores SIGTERM (no handler): SIGKILL, as SIGTERM would do to Python.
            _killpg(pid, signal.SIGKILL if pid in self.direct else signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        while self.children and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                self.children.discard(pid)
                _killpg(pid, signal.SIGKILL)
            else:
                time.sleep(0.02)
        for pid in self.children:
            _killpg(pid, signal.SIGKILL)
        os._exit(0)


def _killpg(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def run_kernel(req):
    """`python -m <module> <args>` as the normal launcher runs it (sys.path[0] == '', which
    ipykernel_launcher drops while importing): the module is found and run afresh, so a launcher
    shadowed on PYTHONPATH or in the cwd runs too, while ipykernel itself is already imported."""
    import runpy

    module = req.get("module", "ipykernel_launcher")
    sys.argv = [module] + list(req["args"])
    sys.path.insert(0, "")
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def main():
    try:
        _warm()
    except BaseException:
        _write({"fatal": traceback.format_exc()})
        sys.exit(1)
    # Everything imported so far lives as long as the kernels: keep the collector off those pages,
    # so a forked kernel does not copy them (copy-on-write) when its first collections run.
    import gc

    gc.collect()
    gc.freeze()
    server = Server()
    problem = _safe_to_fork()
    _write({"ready": SERVER_PID, "python": sys.executable, "error": problem})
    return server.serve()


if __name__ == "__main__":
    _request = main()
    # Only a forked child gets here: it runs the kernel and then ends (end_kernel) — never back
    # into the server's loop.
    run_and_end(lambda: run_kernel(_request))
