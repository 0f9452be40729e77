/**
 * Runs the built CLI (dist/cli/nbagent-cli.cjs, one CommonJS bundle of dispatch.ts and all it
 * imports; scripts/bundle.mjs) from a V8 code cache beside it (nbagent-cli.cjs.cache): node 20 has
 * no compile cache of its own, and a short command (a notebook read) otherwise spends more of its
 * time compiling and linking modules than reading the notebook. The cache is written by the build;
 * when V8 rejects it (another node version or V8 flags) or it is missing, the bundle is compiled
 * from source as usual and a fresh cache is written when the process exits: beside the bundle if
 * that folder is writable, else (an installed package run with another node) in the user's state
 * directory, `<state>/cli-cache/`, which is read only while it and the file are this user's and
 * nobody else may write them. Written to a temporary file and renamed: concurrent processes never
 * read a torn one. V8 checks a cache against its own version and the source's length (the bundle's
 * name carries a hash of its content) before using any of it.
 */
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  type Stats,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { Script } from "node:vm";
import { stateDir } from "../sys/state-dir.js";

/** What the bundle exports (dispatch.ts). */
export interface CliBundle {
  dispatch(argv: string[]): Promise<number>;
}

/** Loads and runs the bundle at `file` (an absolute path); answers its exports. */
export function loadCliBundle(file: string): CliBundle {
  // node --enable-source-maps maps the stacks of modules its loader compiled, not of a vm.Script:
  // then the bundle is required as usual (no cache), and traces name the TypeScript sources.
  if ((process as { sourceMapsEnabled?: boolean }).sourceMapsEnabled)
    return createRequire(import.meta.url)(file) as CliBundle;
  const source = readFileSync(file, "utf8");
  // The bundle as a CommonJS module body: its own require (resolving from its folder: zeromq, ws,
  // sharp … in node_modules), module, exports, __filename and __dirname.
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
  // No import() in it (scripts/bundle.mjs refuses one): a script run from a code cache has no
  // dynamic import callback in node 20.
  const compile = (cachedData: Buffer | undefined) => new Script(wrapped, { filename: file, cachedData });
  const beside = `${file}.cache`;
  const mine = userCachePath(file);
  let script = compile(readOr(beside));
  if (script.cachedDataRejected !== false && mine) {
    const own = readOwned(mine);
    if (own) script = compile(own);
  }
  const module = { exports: {} as CliBundle };
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run(module.exports, createRequire(file), module, file, dirname(file));
  if (script.cachedDataRejected !== false) {
    const made = script;
    process.once("exit", () => writeCache(made, beside, mine));
  }
  return module.exports;
}

/** The file's bytes, or undefined when it cannot be read. */
function readOr(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

/** Where this user's cache of the bundle goes when its own folder is not writable. */
function userCachePath(file: string): string | undefined {
  try {
    return join(stateDir(process.env), "cli-cache", `${basename(file)}.cache`);
  } catch {
    return undefined;
  }
}

/** This user's, and writable by nobody else (group, others). */
function isPrivate(st: Stats): boolean {
  return st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
}

/** A cache in the state directory, only while its folder and the file are private to this user. */
function readOwned(path: string): Buffer | undefined {
  try {
    const dir = lstatSync(dirname(path));
    if (!dir.isDirectory() || !isPrivate(dir)) return undefined;
    const fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      const st = fstatSync(fd);
      return st.isFile() && isPrivate(st) ? readFileSync(fd) : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Writes the compiled script's cache beside the bundle, else in the user's state directory. */
function writeCache(script: Script, beside: string, mine: string | undefined): void {
  const write = (path: string) => {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
    renameSync(tmp, path);
  };
  try {
    accessSync(dirname(beside), fsConstants.W_OK);
    write(beside);
    return;
  } catch {
    /* an installed package's folder: the user's own copy instead */
  }
  if (!mine) return;
  try {
    mkdirSync(dirname(mine), { recursive: true, mode: 0o700 });
    if (isPrivate(lstatSync(dirname(mine)))) write(mine);
  } catch {
    /* compiled from source again next time */
  }
}
