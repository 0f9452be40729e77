/**
 * Kernelspec resolution for local kernels. "python3" (the default) is resolved for the chosen
 * interpreter (findInterpreter, or the explicit `python` option): `<python> -m ipykernel_launcher -f
 * {connection_file}`, as jupyter_client's native kernel does. Other names are read from the
 * kernelspec directories (JUPYTER_PATH, the user data dir, the interpreter's prefix, system dirs).
 * Results are cached per (name, python).
 */

import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { readdir, readFile } from "../../sys/fs-promises.js";
import { KernelStartError } from "../errors.js";
import { findInterpreter } from "../interpreter.js";

export interface KernelSpec {
  name: string;
  argv: string[];
  displayName: string;
  language: string;
  interruptMode: "signal" | "message";
  env: Record<string, string>;
  /** Interpreter used to run the parent-death watchdog (and the kernel when argv[0] is python). */
  python: string;
  resourceDir?: string;
}

const NATIVE = new Set(["python3", "python"]);
const cache = new Map<string, Promise<KernelSpec>>();

/**
 * Where kernelspecs are looked for, and the interpreter found: the host's environment as captured at
 * the edge (JUPYTER_PATH, JUPYTER_DATA_DIR, XDG_DATA_HOME; PATH, VIRTUAL_ENV, NBAGENT_PYTHON for the
 * interpreter) and where the interpreter's choice is remembered. Default: no environment.
 */
export interface SpecLookup {
  env?: Readonly<Record<string, string | undefined>>;
  interpreterCacheDir?: string;
}

export function kernelSpecDirs(
  python: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const dirs: string[] = [];
  for (const p of (env.JUPYTER_PATH ?? "").split(":")) if (p) dirs.push(join(p, "kernels"));
  dirs.push(
    join(
      env.JUPYTER_DATA_DIR ?? join(env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "jupyter"),
      "kernels",
    ),
  );
  if (python) dirs.push(join(dirname(dirname(python)), "share", "jupyter", "kernels"));
  dirs.push("/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels");
  return [...new Set(dirs)];
}

async function readSpec(dir: string, name: string): Promise<Record<string, unknown> | null> {
  try {
    return JSON.parse(await readFile(join(dir, name, "kernel.json"), "utf8"));
  } catch {
    return null;
  }
}

export async function listKernelSpecNames(
  python: string | undefined,
  lookup: SpecLookup = {},
): Promise<string[]> {
  const names = new Set<string>(["python3"]);
  for (const dir of kernelSpecDirs(python, lookup.env ?? {})) {
    try {
      for (const entry of await readdir(dir)) names.add(entry);
    } catch {
      // directory absent
    }
  }
  return [...names].sort();
}

function looksLikePython(cmd: string): boolean {
  return /^python[0-9.]*$/.test(basename(cmd));
}

async function resolve(name: string, python: string | undefined, lookup: SpecLookup): Promise<KernelSpec> {
  const interpreter = (await findInterpreter(interpreterOptions(python, lookup))).path;
  if (NATIVE.has(name)) {
    return {
      name: "python3",
      argv: [interpreter, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
      displayName: "Python 3 (ipykernel)",
      language: "python",
      interruptMode: "signal",
      env: {},
      python: interpreter,
    };
  }
  for (const dir of kernelSpecDirs(interpreter, lookup.env ?? {})) {
    const spec = await readSpec(dir, name);
    if (!spec || !Array.isArray(spec.argv) || spec.argv.length === 0) continue;
    const argv = (spec.argv as unknown[]).map(String);
    // An explicit interpreter replaces a python argv[0]; a bare "python3" (PATH lookup, which may
    // find a Python without ipykernel) becomes the interpreter chosen by findInterpreter.
    if (looksLikePython(argv[0]) && (python || !argv[0].includes("/"))) argv[0] = interpreter;
    return {
      name,
      argv,
      displayName: String(spec.display_name ?? name),
      language: String(spec.language ?? ""),
      interruptMode: spec.interrupt_mode === "message" ? "message" : "signal",
      env: (spec.env as Record<string, string>) ?? {},
      python: interpreter,
      resourceDir: join(dir, name),
    };
  }
  const known = await listKernelSpecNames(interpreter, lookup);
  throw new KernelStartError({ kind: "no-such-kernelspec", name, available: known });
}

/** findInterpreter's options for an explicit interpreter or the lookup's environment. */
export function interpreterOptions(python: string | undefined, lookup: SpecLookup = {}) {
  return python
    ? { python, cacheDir: lookup.interpreterCacheDir }
    : { env: lookup.env, cacheDir: lookup.interpreterCacheDir };
}

export function resolveKernelSpec(
  name = "python3",
  python?: string,
  lookup: SpecLookup = {},
): Promise<KernelSpec> {
  const env = lookup.env ?? {};
  const key = JSON.stringify([
    name,
    python,
    lookup.interpreterCacheDir,
    ...["JUPYTER_PATH", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "PATH", "VIRTUAL_ENV", "NBAGENT_PYTHON"].map(
      (k) => env[k],
    ),
  ]);
  let hit = cache.get(key);
  if (!hit) {
    hit = resolve(name, python, lookup);
    cache.set(key, hit);
    hit.catch(() => cache.delete(key));
  }
  return hit;
}
