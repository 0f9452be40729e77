#!/usr/bin/env node
import { errorText } from "../tools/types.js";
/**
 * The nbagent command line: a thin adapter over the tool objects. Subcommands are registered in
 * commands.ts; `nbagent --help` lists them and `nbagent <command> --help` describes one.
 */
import { asksForHelp, COMMANDS, takeLimitFlags, takeSandboxFlag, usage } from "./commands.js";
import { takeGatewayFlags } from "./gateway-flag.js";

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name) {
    process.stderr.write(usage());
    return 2;
  }
  if (name === "-h" || name === "--help" || name === "help") {
    const topic = rest[0];
    if (topic === undefined) {
      process.stdout.write(usage());
      return 0;
    }
    const command = COMMANDS[topic];
    if (!command) {
      process.stderr.write(`nbagent: no command '${topic}'\n\n${usage()}`);
      return 2;
    }
    process.stdout.write((await command.load()).help);
    return 0;
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
  if (asksForHelp(rest)) {
    process.stdout.write((await command.load()).help);
    return 0;
  }
  const sandbox = takeSandboxFlag(name, rest);
  if ("error" in sandbox) {
    process.stderr.write(`nbagent ${name}: ${errorText(sandbox.error)}\n`);
    return 2;
  }
  const limits = takeLimitFlags(name, sandbox.args);
  if ("error" in limits) {
    process.stderr.write(`nbagent ${name}: ${errorText(limits.error)}\n`);
    return 2;
  }
  const gateway = takeGatewayFlags(name, limits.args);
  if ("error" in gateway) {
    process.stderr.write(`nbagent ${name}: ${errorText(gateway.error)}\n`);
    return 2;
  }
  return (await command.load()).run(gateway.args);
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
