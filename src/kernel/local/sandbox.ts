/**
 * The opt-in sandbox and the isolation probe (docs/isolation.md).
 * The sandbox runs the kernel's wrapper under bubblewrap: the whole filesystem read-only, except the
 * kernel's cwd, the connection-file directory and the paths the caller names; a private temp dir
 * (tmpfs on $TMPDIR and /dev/shm, sized by limit-values.ts tmpfsBytes); with `network: false` a
 * network namespace of its own (nothing but a loopback nobody else shares — the host then talks to
 * the kernel over unix sockets). The PID
 * namespace is still made by the wrapper inside (pidns.py), so the relay, the watchdog and the
 * signals work as without the sandbox.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import type { KernelIsolation, KernelSandbox } from "../types.js";
import { findBwrap, NO_BWRAP } from "./bwrap.js";
import { tmpfsBytes } from "./limit-values.js";
import { isolationSource } from "./watchdog.js";

/** The paths a sandboxed kernel may write (`own`: its socket folder), deduplicated, existing ones only. */
export function writablePaths(
  sandbox: KernelSandbox,
  cwd: string,
  runtimeDir: string,
  own: readonly string[] = [],
): string[] {
  const out: string[] = [];
  for (const p of [cwd, runtimeDir, ...own, ...sandbox.writable]) {
    const abs = resolve(p);
    if (!out.includes(abs) && existsSync(abs)) out.push(abs);
  }
  return out;
}

const sizes = new Map<string, boolean>();

/** Whether this bubblewrap can size a tmpfs (`--size`, bubblewrap 0.5 and later); asked once per path. */
export function bwrapSizesTmpfs(bwrap: string): boolean {
  let known = sizes.get(bwrap);
  if (known === undefined) {
    const help = spawnSync(bwrap, ["--help"], { encoding: "utf8", timeout: 5_000 });
    known = /^\s*--size\b/m.test(`${help.stdout ?? ""}${help.stderr ?? ""}`);
    sizes.set(bwrap, known);
  }
  return known;
}

/**
 * bwrap's arguments up to (not including) the command. `tmpfsBytes`: the size of the private temp
 * dir and /dev/shm (limit-values.ts tmpfsBytes; undefined: bwrap's default, half the RAM, for a
 * bubblewrap without `--size`).
 */
export function bwrapArgs(
  sandbox: KernelSandbox,
  writable: string[],
  cwd: string,
  tmpfsBytes?: number,
): string[] {
  const args = ["--die-with-parent", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev"];
  const size = tmpfsBytes ? ["--size", String(tmpfsBytes)] : [];
  // Writable /proc: the wrapper writes its user-namespace maps there when not root.
  args.push(
    "--bind",
    "/proc",
    "/proc",
    ...size,
    "--tmpfs",
    "/dev/shm",
    ...size,
    "--tmpfs",
    resolve(tmpdir()),
  );
  for (const p of writable) args.push("--bind", p, p);
  // The kernel's init joins its limits' cgroups there, then makes /sys read-only (pidns.py).
  if (existsSync("/sys/fs/cgroup")) args.push("--bind", "/sys/fs/cgroup", "/sys/fs/cgroup");
  if (!sandbox.network) args.push("--unshare-net");
  args.push("--chdir", resolve(cwd), "--");
  return args;
}

/** Python that reports what pidns.enter() achieves here, as one JSON line (the doctor's probe). */
function probeSource(): string {
  return `${isolationSource()}
import json
info, init, status = enter(None)
if init is None and "via" in info:
    os._exit(0)
if init is not None:
    os.waitpid(init, 0)
print(json.dumps(info), flush=True)
`;
}

/**
 * Runs the probe with `python` (inside the sandbox when asked): the isolation a kernel started now
 * would get. Never throws: a probe that cannot run reports pidNamespace false with the reason.
 */
export async function probeIsolation(
  python: string,
  sandbox?: KernelSandbox,
  bwrapPath?: string,
): Promise<KernelIsolation> {
  let command = python;
  let args = ["-c", probeSource()];
  if (sandbox) {
    const bwrap = bwrapPath ?? findBwrap({});
    if (!bwrap) return { pidNamespace: false, reason: NO_BWRAP };
    const cwd = process.cwd();
    const writable = writablePaths(sandbox, cwd, cwd);
    const size = bwrapSizesTmpfs(bwrap) ? tmpfsBytes(0) : undefined;
    args = [...bwrapArgs(sandbox, writable, cwd, size), python, ...args];
    command = bwrap;
  }
  return new Promise((resolveProbe) => {
    let out = "";
    let err = "";
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.once("error", (e) =>
      resolveProbe({ pidNamespace: false, reason: `cannot run ${command}: ${e.message}` }),
    );
    child.once("close", (code) => {
      try {
        const info = JSON.parse(out.trim().split("\n").pop() ?? "") as KernelIsolation;
        resolveProbe(
          sandbox ? { ...info, sandbox: { writable: sandbox.writable, network: sandbox.network } } : info,
        );
      } catch {
        const why = err.trim().split("\n").pop() || `exit code ${code}`;
        resolveProbe({
          pidNamespace: false,
          reason: `${sandbox ? "the sandbox" : "the probe"} failed: ${why}`,
        });
      }
    });
  });
}
