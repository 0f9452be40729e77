/**
 * What `nbagent <command> …` does (main.ts hands every argument list but `--version` here): help,
 * the command's flags that are settings, the settings resolved once, then the command.
 */
import { resolveSettings, SettingsError, type SettingsFlags } from "../runtime/settings.js";
import { errorText } from "../tools/types.js";
import { asksForHelp, COMMANDS, takeLimitFlags, takeSandboxFlag, usage } from "./commands.js";
import { takeGatewayFlags } from "./gateway-flag.js";

export async function dispatch(argv: string[]): Promise<number> {
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
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`nbagent: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  if (asksForHelp(rest)) {
    process.stdout.write((await command.load()).help);
    return 0;
  }
  // The flags that are settings come out of the arguments here; with the environment they are
  // resolved (and checked) once, and every command gets the answer.
  const flags: SettingsFlags = {};
  const sandbox = takeSandboxFlag(name, rest, flags);
  if ("error" in sandbox) {
    process.stderr.write(`nbagent ${name}: ${errorText(sandbox.error)}\n`);
    return 2;
  }
  const limits = takeLimitFlags(name, sandbox.args, flags);
  if ("error" in limits) {
    process.stderr.write(`nbagent ${name}: ${errorText(limits.error)}\n`);
    return 2;
  }
  const gateway = takeGatewayFlags(name, limits.args, flags, process.env);
  if ("error" in gateway) {
    process.stderr.write(`nbagent ${name}: ${errorText(gateway.error)}\n`);
    return 2;
  }
  let settings: ReturnType<typeof resolveSettings>;
  try {
    settings = resolveSettings(flags, process.env);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`nbagent ${name}: ${errorText(err.message)}\n`);
    return 2;
  }
  return (await command.load()).run(gateway.args, settings);
}
