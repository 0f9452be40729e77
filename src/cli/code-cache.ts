/**
 * Runs the built CLI (dist/cli/nbagent-cli.cjs, one CommonJS bundle of dispatch.ts and all it
 * imports; scripts/bundle.mjs) from a V8 code cache beside it (nbagent-cli.cjs.cache): node 20 has
 * no compile cache of its own, and a short command (a notebook read) otherwise spends more of its
 * time compiling and linking modules than reading the notebook. The cache is written by the build;
 * when V8 rejects it (another node version or V8 flags) or it is missing, the bundle is compiled
 * from source as usual and, if the folder is writable, a fresh cache is written when the process
 * exits (written to a temporary file and renamed: concurrent processes never read a torn one). V8
 * checks a cache against the source and its own version before using any of it.
 */
import { accessSync, constants as fsConstants, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { Script } from "node:vm";

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
  const cacheFile = `${file}.cache`;
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    /* none yet: compiled from source, and written at exit */
  }
  // The bundle as a CommonJS module body: its own require (resolving from its folder: zeromq, ws,
  // sharp … in node_modules), module, exports, __filename and __dirname.
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
  // No import() in it (scripts/bundle.mjs refuses one): a script run from a code cache has no
  // dynamic import callback in node 20.
  const script = new Script(wrapped, { filename: file, cachedData });
  const module = { exports: {} as CliBundle };
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run(module.exports, createRequire(file), module, file, dirname(file));
  if (cachedData === undefined || script.cachedDataRejected) {
    process.once("exit", () => {
      try {
        accessSync(dirname(file), fsConstants.W_OK);
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        /* a folder not ours to write (an installed package): compiled again next time */
      }
    });
  }
  return module.exports;
}
