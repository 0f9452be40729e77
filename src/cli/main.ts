#!/usr/bin/env node
/**
 * The nbagent command line: a thin adapter over the tool objects. Subcommands are registered in
 * commands.ts; `nbagent --help` lists them and `nbagent <command> --help` describes one. This entry
 * imports nothing up front but node:url (loaded by node's own start; a dynamic import() of it would
 * start node's ES module loader, a few ms of a short command): `--version` reads the package's version and ends, every other call
 * loads the dispatcher (dispatch.ts) — built, from the CommonJS bundle beside this file and its V8
 * code cache (code-cache.ts), so a short command compiles almost nothing.
 */

import { fileURLToPath } from "node:url";

/** The package's version, written in by the bundle (scripts/bundle.mjs); undefined run from source. */
declare const __NBAGENT_VERSION__: string | undefined;
/** The CommonJS bundle of dispatch.ts beside the built entry (scripts/bundle.mjs); undefined run from source. */
declare const __NBAGENT_CLI_BUNDLE__: string | undefined;

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "--version" || argv[0] === "-V") {
    const built = typeof __NBAGENT_VERSION__ === "string" ? __NBAGENT_VERSION__ : undefined;
    process.stdout.write(`${built ?? (await import("./version.js")).version()}\n`);
    return 0;
  }
  const { dispatch } =
    typeof __NBAGENT_CLI_BUNDLE__ === "string"
      ? (await import("./code-cache.js")).loadCliBundle(
          fileURLToPath(new URL(__NBAGENT_CLI_BUNDLE__, import.meta.url)),
        )
      : await import("./dispatch.js");
  return dispatch(argv);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`nbagent: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
