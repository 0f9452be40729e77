// How a command reports a usage error (exit 2: docs/cli.md).
/**
 * A command's arguments, parsed; on a usage error the message and the usage line go to stderr and
 * the result is undefined (the command then exits 2: docs/cli.md).
 */
export function parsedOrUsage<T>(
  name: string,
  usage: string,
  parse: (args: string[]) => T,
  args: string[],
): T | undefined {
  try {
    return parse(args);
  } catch (err) {
    process.stderr.write(`nbagent ${name}: ${(err as Error).message}\n${usage} (--help for more)\n`);
    return undefined;
  }
}
