#!/usr/bin/env node
/**
 * The nbagent command line: a thin adapter over the tool objects. Subcommands are registered in
 * commands.ts; `nbagent --help` lists them and `nbagent <command> --help` describes one. This entry
 * imports nothing up front: `--version` reads the package's version and ends, every other call
 * loads the dispatcher (dispatch.ts) — a short command pays only for the modules it uses.
 */

/** The package's version, written in by the bundle (scripts/bundle.mjs); undefined run from source. */
declare const __NBAGENT_VERSION__: string | undefined;

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "--version" || argv[0] === "-V") {
    const built = typeof __NBAGENT_VERSION__ === "string" ? __NBAGENT_VERSION__ : undefined;
    process.stdout.write(`${built ?? (await import("./version.js")).version()}\n`);
    return 0;
  }
  const { dispatch } = await import("./dispatch.js");
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
