/**
 * What a local kernel may see of nbagent's own state (docs/isolation.md, "nbagent's state"): the
 * folders to cover with an empty one in the kernel's mount namespace and the paths to put back.
 * The kernel's init (pidns.py) does the mounts; this only decides the lists.
 */
import { basename, dirname, resolve } from "node:path";
import type { KernelConfinement, KernelLimits, KernelSandbox } from "../types.js";
import { type InitLimits, initLimits } from "./limit-values.js";

export interface ConfineSpec {
  hide: string[];
  expose: string[];
  /** The limits for limits.py's apply_limits, and the name of the kernel's cgroups. */
  limits?: InitLimits;
  id?: string;
}

/**
 * Hidden: the caller's folders (default: the per-user state directory, the parent of the
 * connection-file folder), always the connection-file folder itself and the folder of each own path
 * (the user's socket root, connection-file.ts `socketRoot`), and without network the
 * host's /run (its unix sockets — a system bus, a container daemon — would be a way out).
 * Put back: the kernel's own connection file (and its socket folder), then the caller's paths.
 */
export function confineSpec(
  runtimeDir: string,
  own: string[],
  confinement?: KernelConfinement,
  sandbox?: KernelSandbox,
  limits?: KernelLimits,
): ConfineSpec {
  const hide = [...(confinement?.hide ?? [dirname(resolve(runtimeDir))]), resolve(runtimeDir)];
  // The folders the kernel's own files sit in (the connection-file folder, the user's socket root):
  // every other kernel's files there are hidden too.
  for (const p of own) if (!hide.includes(dirname(resolve(p)))) hide.push(dirname(resolve(p)));
  if (sandbox && !sandbox.network) hide.push("/run", "/var/run");
  return {
    hide,
    expose: [...own, ...(confinement?.expose ?? [])].map((p) => resolve(p)),
    limits: initLimits(limits),
    // The kernel's cgroups are named after its connection file (unique per launch, restarts too).
    id: basename(own[0] ?? "kernel").replace(/\.json$/, ""),
  };
}
