#!/usr/bin/env node
/**
 * The nbagent command line: a thin adapter over the tool objects.
 *   nbagent call <tool> <params|@file|-> [--cwd DIR] [--json]
 *   nbagent doctor [--json]
 * (more subcommands are registered in commands.ts)
 */
import { COMMANDS, usage } from "./commands.js";

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  if (name === "--version" || name === "-V") {
    const { version } = await import("./version.js");
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`nbagent: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  return command.run(rest);
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
