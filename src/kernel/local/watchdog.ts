/**
 * The Python wrapper every spawned local kernel starts through (docs/isolation.md).
 *
 * With a PID namespace (the default where the machine allows, pidns.py): the spawned process is the
 * relay — it reads the host's pipe on its stdin and kills the kernel at EOF (host exit, SIGTERM,
 * SIGKILL), turns SIGTERM into SIGKILL of the kernel and exits as the kernel did. Pid 1 of the
 * namespace is the kernel's init (reaps, forwards signals, holds no privileges); the kernel is pid 2
 * and leads a session and process group of its own (interrupts go to that group); everything it
 * starts ends with the namespace. The relay prints one line `NBAGENT_ISOLATION {json}` on stdout:
 * what was achieved, and the kernel's pid as the host sees it ("kernel").
 *
 * Without (`--no-pidns`, or the namespace refused): as before — a tiny watchdog forked into a process
 * group of its own reads the host's pipe and ends the kernel's whole group at EOF (SIGTERM, then
 * SIGKILL); it dies with the kernel (PR_SET_PDEATHSIG, plus a getppid() check). The kernel runs in
 * the wrapper's process (the spawned pid IS the kernel's pid); the line has no "kernel".
 *
 * Either way the kernel runs `-m module` through runpy (no second interpreter start), anything else
 * through exec.
 */
import { readFileSync } from "node:fs";
import { assetPath } from "../../assets.js";

export const ISOLATION_LINE = "NBAGENT_ISOLATION ";

const MAIN = `
import json, os, sys, signal
a = sys.argv[1:]
confine = None
if a and a[0].startswith(("--confine-fd=", "--confine-file=")):
    flag, _, where = a[0].partition("=")
    a = a[1:]
    fd = int(where) if flag == "--confine-fd" else os.open(where, os.O_RDONLY | os.O_NOFOLLOW)
    confine = json.loads(read_to_end(fd))
    os.close(fd)
    if confine.pop("exposeConnectionFile", False) and "-f" in a[:-1]:
        # A kernel started by a Jupyter server: its connection file, and its socket folder for ipc.
        own = a[a.index("-f") + 1]
        confine["expose"].append(own)
        try:
            with open(own) as f:
                info = json.load(f)
            if info.get("transport") == "ipc":
                # Its socket folder is put back; the folder holding every kernel's is hidden.
                confine["expose"].append(os.path.dirname(info["ip"]))
                confine["hide"].append(os.path.dirname(os.path.dirname(info["ip"])))
        except (OSError, ValueError, KeyError):
            pass
if a and a[0] == "--no-pidns":
    isolation, init, status = {"pidNamespace": False, "reason": "turned off (NBAGENT_PIDNS=0)"}, None, None
else:
    isolation, init, status = enter(confine)
if a and a[0] in ("--pidns", "--no-pidns"):
    a = a[1:]
if init is not None:
    os.write(1, ("\\n${ISOLATION_LINE}" + json.dumps(dict(isolation, kernel=init)) + "\\n").encode())
    relay(init, 0, status)
if "via" not in isolation:
    os.write(1, ("\\n${ISOLATION_LINE}" + json.dumps(isolation) + "\\n").encode())
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
os.closerange(3, 1 << 20)  # the kernel starts with nothing of its starter's but stdout and stderr
if a and a[0] == "--exec":
    os.execvp(a[1], a[1:])
elif a and a[0] == "-m":
    import runpy
    sys.argv = a[1:]
    if a[1] == "ipykernel_launcher":
        import_ipykernel()
    run_and_end(lambda: runpy.run_module(a[1], run_name="__main__", alter_sys=True))
else:
    os.execv(sys.executable, [sys.executable] + a)
`;

let source: string | undefined;

/** The wrapper's source: limits.py, pidns.py, then the wrapper itself. */
export function watchdogSource(): string {
  source ??= `${isolationSource()}\n${MAIN}`;
  return source;
}

/**
 * limits.py, pidns.py and endkernel.py, in that order: what the kernel's relay and init run, and how
 * a directly started kernel ends (one namespace).
 */
export function isolationSource(): string {
  return ["limits.py", "pidns.py", "endkernel.py"]
    .map((f) => readFileSync(assetPath(`kernel/local/${f}`), "utf8"))
    .join("\n");
}

/** Parses the wrapper's `NBAGENT_ISOLATION {json}` line out of stdout text (undefined until seen). */
export function parseIsolationLine(text: string): Record<string, unknown> | undefined {
  const at = text.indexOf(ISOLATION_LINE);
  if (at < 0) return undefined;
  const end = text.indexOf("\n", at);
  if (end < 0) return undefined;
  try {
    return JSON.parse(text.slice(at + ISOLATION_LINE.length, end));
  } catch {
    return undefined;
  }
}
