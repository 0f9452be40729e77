/**
 * Which Python interpreter runs kernels (and the Python-side helpers).
 * Order (first that can import ipykernel wins, except an explicit NBAGENT_PYTHON / option, which is
 * always used as given so that a wrong setting is reported, not silently skipped):
 *   1. the `python` option, then NBAGENT_PYTHON
 *   2. an active VIRTUAL_ENV
 *   3. ./.venv under the working directory
 *   4. every `python3` on PATH, then /usr/bin/python3
 */
import { execFile } from "node:child_process";
import { accessSync, constants, mkdirSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { writeFileAtomicSync } from "../sys/atomic-write.js";
import { stateDir } from "../sys/state-dir.js";

export interface InterpreterChoice {
  path: string;
  /** Why this one: "option", "NBAGENT_PYTHON", "VIRTUAL_ENV", ".venv", "PATH", "/usr/bin/python3". */
  source: string;
  /** Modules checked (ipykernel, jupyter_server, nbformat, …) → importable. */
  modules: Record<string, boolean>;
  version: string;
}

export interface FindOptions {
  python?: string;
  cwd?: string;
  /**
   * The host's environment to look in (NBAGENT_PYTHON, VIRTUAL_ENV, PATH), captured at the edge
   * (runtime/settings.ts); default none: ./.venv, then /usr/bin/python3.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the last choice is remembered for the next process (default $TMPDIR/nbagent-<uid>). */
  cacheDir?: string;
  /** Modules to probe; the first listed one decides eligibility for the implicit candidates. */
  modules?: string[];
  /** Probe again, ignoring the in-process and on-disk caches (doctor). */
  fresh?: boolean;
}

const DEFAULT_MODULES = ["ipykernel", "jupyter_server", "nbformat"];

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function candidateInterpreters(
  options: FindOptions = {},
): { path: string; source: string; explicit: boolean }[] {
  const env = options.env ?? {};
  const cwd = options.cwd ?? process.cwd();
  const out: { path: string; source: string; explicit: boolean }[] = [];
  if (options.python) out.push({ path: options.python, source: "option", explicit: true });
  else if (env.NBAGENT_PYTHON)
    out.push({ path: env.NBAGENT_PYTHON, source: "NBAGENT_PYTHON", explicit: true });
  if (out.length) return out;
  if (env.VIRTUAL_ENV)
    out.push({ path: join(env.VIRTUAL_ENV, "bin", "python"), source: "VIRTUAL_ENV", explicit: false });
  out.push({ path: resolve(cwd, ".venv", "bin", "python"), source: ".venv", explicit: false });
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir) out.push({ path: join(dir, "python3"), source: "PATH", explicit: false });
  }
  out.push({ path: "/usr/bin/python3", source: "/usr/bin/python3", explicit: false });
  const seen = new Set<string>();
  return out.filter((c) => {
    if (seen.has(c.path) || !isExecutable(c.path)) return false;
    seen.add(c.path);
    return true;
  });
}

const PROBE = `
import importlib.util, json, sys
mods = sys.argv[1].split(",")
specs = {m: importlib.util.find_spec(m) for m in mods}
print(json.dumps({"version": sys.version.split()[0],
  "modules": {m: s is not None for m, s in specs.items()},
  "origins": {m: s.origin for m, s in specs.items() if s is not None and s.origin}}))
`;

export function probeInterpreter(
  path: string,
  modules: string[] = DEFAULT_MODULES,
): Promise<{ version: string; modules: Record<string, boolean>; origins?: Record<string, string> } | null> {
  return new Promise((done) => {
    execFile(path, ["-c", PROBE, modules.join(",")], { timeout: 15_000 }, (err, stdout) => {
      if (err) return done(null);
      try {
        done(JSON.parse(stdout));
      } catch {
        done(null);
      }
    });
  });
}

const cache = new Map<string, Promise<InterpreterChoice>>();

/**
 * Finds the interpreter to use. Rejects with an actionable message when none can import ipykernel
 * (or when an explicit one does not run at all).
 */
export function findInterpreter(options: FindOptions = {}): Promise<InterpreterChoice> {
  const env = options.env ?? {};
  const key = JSON.stringify([
    options.python,
    env.NBAGENT_PYTHON,
    env.VIRTUAL_ENV,
    options.cwd,
    env.PATH,
    options.modules,
    options.cacheDir,
  ]);
  let hit = options.fresh ? undefined : cache.get(key);
  if (!hit) {
    hit = resolveInterpreter(options);
    cache.set(key, hit);
    hit.catch(() => cache.delete(key));
  }
  return hit;
}

async function resolveInterpreter(options: FindOptions): Promise<InterpreterChoice> {
  const modules = options.modules ?? DEFAULT_MODULES;
  const required = modules[0] ?? "ipykernel";
  const candidates = candidateInterpreters(options);
  const explicit = options.python ?? options.env?.NBAGENT_PYTHON;
  if (explicit && candidates.length === 0) {
    throw new Error(
      `Python interpreter ${explicit} (from ${options.python ? "the python option" : "NBAGENT_PYTHON"}) is not an executable file`,
    );
  }
  const cacheFile = diskCachePath(options.cacheDir);
  const cached = options.fresh ? undefined : readDiskCache(cacheFile, candidates, modules);
  if (cached) return cached;
  const tried: string[] = [];
  // Probe every candidate at once (a pyenv shim alone can take most of a second), then take the
  // first eligible one in preference order.
  const probes = candidates.map((c) => probeInterpreter(c.path, modules));
  for (const [i, c] of candidates.entries()) {
    const probe = await probes[i];
    if (c.explicit) {
      if (!probe) throw new Error(`Python interpreter ${c.path} (from ${c.source}) did not run`);
      return { path: c.path, source: c.source, version: probe.version, modules: probe.modules };
    }
    if (probe?.modules[required]) {
      const choice = { path: c.path, source: c.source, version: probe.version, modules: probe.modules };
      writeDiskCache(cacheFile, candidates, modules, choice, probe.origins?.[required]);
      return choice;
    }
    tried.push(c.path);
  }
  throw new Error(
    `No Python interpreter with ${required} found (tried: ${tried.join(", ") || "none"}). ` +
      "Fix: on Debian as root `apt-get install -y python3-ipykernel python3-jupyter-server python3-nbformat`, " +
      "or `python3 -m venv .venv && .venv/bin/pip install ipykernel jupyter_server nbformat`, " +
      "or set NBAGENT_PYTHON to an interpreter that has ipykernel.",
  );
}

/**
 * On-disk memory of the last choice, so a new process (each `nbagent call`) does not probe every
 * python3 on PATH again (a pyenv shim alone costs most of a second). A hit needs the same candidate
 * list, the chosen interpreter and its ipykernel unchanged (mtimes), and an age under an hour (so a
 * higher-ranked interpreter that gains ipykernel is noticed). `nbagent doctor` always probes afresh.
 */
const DISK_CACHE_MAX_AGE_MS = 60 * 60 * 1000;

interface DiskCacheEntry {
  key: string;
  savedAt: number;
  choice: InterpreterChoice;
  stamps: [string, number][];
}

function diskCachePath(dir = stateDir({})): string {
  return join(dir, "interpreter.json");
}

function cacheKey(candidates: { path: string; explicit: boolean }[], modules: string[]): string {
  return JSON.stringify([candidates.map((c) => c.path), modules]);
}

function mtimeOf(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

function readDiskCache(
  file: string,
  candidates: { path: string; explicit: boolean }[],
  modules: string[],
): InterpreterChoice | undefined {
  if (candidates.some((c) => c.explicit)) return undefined;
  try {
    const entry = JSON.parse(readFileSync(file, "utf8")) as DiskCacheEntry;
    if (entry.key !== cacheKey(candidates, modules)) return undefined;
    if (Date.now() - entry.savedAt > DISK_CACHE_MAX_AGE_MS) return undefined;
    if (!entry.stamps.every(([p, m]) => mtimeOf(p) === m)) return undefined;
    return entry.choice;
  } catch {
    return undefined;
  }
}

function writeDiskCache(
  file: string,
  candidates: { path: string; explicit: boolean }[],
  modules: string[],
  choice: InterpreterChoice,
  requiredOrigin: string | undefined,
): void {
  if (candidates.some((c) => c.explicit) || !requiredOrigin) return;
  const stamps: [string, number][] = [];
  for (const p of [choice.path, requiredOrigin]) {
    const m = mtimeOf(p);
    if (m === undefined) return;
    stamps.push([p, m]);
  }
  const entry: DiskCacheEntry = { key: cacheKey(candidates, modules), savedAt: Date.now(), choice, stamps };
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileAtomicSync(file, JSON.stringify(entry));
  } catch {
    /* a cache that cannot be written only costs the next process a probe */
  }
}
