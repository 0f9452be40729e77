/**
 * The Python wrapper every local kernel starts through. It forks a tiny watchdog that reads the
 * host's pipe on its stdin: when the host goes away for any reason (normal exit, SIGINT/SIGTERM,
 * SIGKILL) the pipe reaches EOF and the watchdog ends the kernel's whole process group (SIGTERM, then
 * SIGKILL). The watchdog sits in a process group of its own, so signals aimed at the kernel's group
 * (interrupts, shutdown) never reach it and ipykernel's shutdown does not wait for it as a child;
 * it dies with the kernel (PR_SET_PDEATHSIG, plus a getppid() check).
 * The kernel itself then runs in the wrapper's process — `-m module` through runpy (no second
 * interpreter start), anything else through exec — so the spawned pid IS the kernel's pid.
 */
export const WATCHDOG_PY = `
import os, sys, signal
a = sys.argv[1:]
kpid = os.getpid()
if os.fork() == 0:
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(1, 9)
    except Exception:
        libc = None
    import select, time
    while os.getppid() == kpid:
        if not select.select([0], [], [], 1.0)[0]:
            continue
        try:
            if os.read(0, 512):
                continue
        except OSError:
            pass
        if libc is not None:
            libc.prctl(1, 0)
        try:
            os.killpg(kpid, signal.SIGTERM)
        except OSError:
            break
        for _ in range(40):
            if os.getppid() != kpid:
                break
            time.sleep(0.025)
        try:
            os.killpg(kpid, signal.SIGKILL)
        except OSError:
            pass
        break
    os._exit(0)
fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(fd, 0)
os.close(fd)
if a and a[0] == "--exec":
    os.execvp(a[1], a[1:])
elif a and a[0] == "-m":
    import runpy
    sys.argv = a[1:]
    runpy.run_module(a[1], run_name="__main__", alter_sys=True)
else:
    os.execv(sys.executable, [sys.executable] + a)
`;
