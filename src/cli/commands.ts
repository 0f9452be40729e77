/** The CLI's subcommands: each parses its own arguments and returns an exit code. */
import { artifactCommand } from "./artifact-command.js";
import { batchCommand } from "./batch-command.js";
import { callCommand } from "./call.js";
import { demoCommand } from "./demo-command.js";
import { doctorCommand } from "./doctor-command.js";
import { gatewayCommand } from "./gateway-command.js";
import { mcpCommand } from "./mcp-command.js";
import { notebookCommand } from "./notebook-command.js";
import { pythonCommand } from "./python-command.js";
import { runCommand } from "./run-command.js";
import { sessionsCommand } from "./sessions-command.js";

export interface Command {
  /** One line for `nbagent --help`. */
  summary: string;
  /** The whole `nbagent <command> --help` text: what it does, usage, options, exit codes, an example. */
  help: string;
  run(args: string[]): Promise<number>;
}

export const COMMANDS: Record<string, Command> = {
  call: callCommand,
  batch: batchCommand,
  python: pythonCommand,
  notebook: notebookCommand,
  run: runCommand,
  sessions: sessionsCommand,
  artifact: artifactCommand,
  doctor: doctorCommand,
  demo: demoCommand,
  mcp: mcpCommand,
  gateway: gatewayCommand,
};

export function usage(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return [
    "nbagent — Jupyter notebooks and live Python kernels for agents and people at a terminal",
    "",
    "usage: nbagent <command> [options]",
    "       nbagent <command> --help      (or: nbagent help <command>)",
    "       nbagent --version",
    "",
    "commands:",
    ...rows,
    "",
    "Kernels start on this machine; --gateway URL (or NBAGENT_GATEWAY_URL, token NBAGENT_GATEWAY_TOKEN)",
    "runs them on a Jupyter server or Enterprise Gateway instead (call, batch, python, notebook, run,",
    "mcp, demo). --session NAME (call, batch, python) keeps a python kernel by name across processes.",
    "",
    "example:",
    `  nbagent call python '{"cells":[{"code":"1 + 1"}]}'`,
    "",
  ].join("\n");
}

/** The commands whose kernels the sandbox applies to (docs/isolation.md). */
const SANDBOXED = new Set(["call", "batch", "mcp", "demo", "python", "notebook", "run"]);

/**
 * Takes `--sandbox` / `--sandbox=net-off` out of a command's arguments (before a `--`) into
 * NBAGENT_SANDBOX, which the runtime reads, and checks NBAGENT_SANDBOX's value. Returns the
 * remaining arguments, or an error text (usage, exit 2).
 */
export function takeSandboxFlag(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { args: string[] } | { error: string } {
  const rest: string[] = [];
  let given: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    if (a === "--sandbox") given = "1";
    else if (a.startsWith("--sandbox=")) given = a.slice("--sandbox=".length);
    else rest.push(a);
  }
  if (given !== undefined && !SANDBOXED.has(name)) {
    return { error: `--sandbox applies to ${[...SANDBOXED].join(", ")}, not to ${name}` };
  }
  const value = given ?? env.NBAGENT_SANDBOX;
  if (value !== undefined && !["", "0", "off", "1", "on", "net-off"].includes(value.trim().toLowerCase())) {
    return {
      error: `${given !== undefined ? "--sandbox=" : "NBAGENT_SANDBOX="}${value} is not one of 1 (on), net-off, 0 (off)`,
    };
  }
  if (given !== undefined) env.NBAGENT_SANDBOX = given;
  return { args: rest };
}

/** `--help` or `-h` among a command's own arguments (before a `--`). */
export function asksForHelp(args: string[]): boolean {
  for (const a of args) {
    if (a === "--") return false;
    if (a === "--help" || a === "-h") return true;
  }
  return false;
}
