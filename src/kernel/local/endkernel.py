"""How a kernel's Python process ends (docs/reliability.md, "A kernel's exit does what Python's
would"): the steps of the interpreter's exit that the code it ran can rely on, then os._exit. And,
before it runs, how it imports ipykernel (import_ipykernel below). Shared by the fork server's
kernels (forkserver.py loads this file) and by kernels started directly (the launcher's source,
src/kernel/local/watchdog.ts, includes it)."""
import os
import sys


def import_ipykernel():
    """Imports ipykernel's kernel without its debugger support (docs/reliability.md, "A kernel's
    start"): ipykernel imports debugpy's server when it is installed (~0.16 s of CPU, and a `uname -p`
    subprocess), for debug requests that nbagent never sends and that no other client can send to a
    local kernel (its channels are hidden from everyone else). ipykernel runs without it as it does
    where debugpy is not installed. Only ipykernel's own import is kept from it: a cell can still
    `import debugpy`. Does nothing when ipykernel cannot be imported (the kernel's start says why)."""
    if "debugpy" in sys.modules:
        return
    sys.modules["debugpy"] = None
    try:
        import ipykernel.ipkernel  # noqa: F401
        import ipykernel.kernelapp  # noqa: F401
    except Exception:
        pass
    finally:
        if "debugpy" in sys.modules and sys.modules["debugpy"] is None:
            del sys.modules["debugpy"]


def _flush_open_files():
    """Flushes every file object the kernel left open (as their finalizers would at a normal exit).

    Objects made before the server's gc.freeze() are not listed: they are the server's own."""
    import gc
    import io

    objects = gc.get_objects()
    # Text files first: their pending text goes into the binary buffer below them.
    for kinds in ((io.TextIOWrapper,), (io.BufferedWriter, io.BufferedRandom)):
        for obj in objects:
            if isinstance(obj, kinds):
                try:
                    if not obj.closed:
                        obj.flush()
                except Exception:
                    pass
    del objects
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def _settle_control_thread():
    """Waits for a kernel's control thread to finish the shutdown_request it is answering.

    ipykernel's exit handler stops the IOPub thread before it joins the control thread, and the
    control thread flushes stdout through IOPub right after answering a shutdown_request: when the
    exit handler comes first, that flush waits for a thread that is gone, and the kernel hangs until
    it is killed. The interpreter's slower teardown path happened to leave the control thread time
    to finish; here it is waited for (its loop ends by itself once the shutdown was answered)."""
    kernelapp = sys.modules.get("ipykernel.kernelapp")
    app_class = getattr(kernelapp, "IPKernelApp", None)
    try:
        if app_class is None or not app_class.initialized():
            return
        app = app_class.instance()
        thread = getattr(app, "control_thread", None)
        asked = getattr(getattr(app, "kernel", None), "_shutdown_message", None) is not None
        if thread is not None and asked and thread.is_alive():
            thread.join(5)
    except Exception:
        pass


def end_kernel(code):
    """Ends a forked kernel the way the interpreter would (non-daemon threads joined, the control
    thread's answer to a shutdown finished, then the atexit handlers — IPython's and ipykernel's,
    which close the kernel's sockets and history, and the notebook's own — then open files
    flushed), but without the interpreter's teardown: freeing every object of a process forked
    from the server touches (copy-on-write) most of the pages it shares with the server, which cost
    a forked kernel ~10x the CPU of its os._exit (docs/reliability.md)."""
    import threading

    try:
        threading._shutdown()
    except BaseException:
        pass
    _settle_control_thread()
    import atexit

    atexit._run_exitfuncs()
    _flush_open_files()
    os._exit(code)


def _exit_code(err):
    """The exit status the interpreter gives an uncaught SystemExit."""
    code = err.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def run_and_end(run):
    """Runs a kernel (`run()`), then ends the process with end_kernel and the exit status the
    interpreter would give it (0, an uncaught SystemExit's code, or 1 after printing the error)."""
    try:
        run()
        code = 0
    except SystemExit as err:
        code = _exit_code(err)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    end_kernel(code)
