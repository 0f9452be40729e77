/** The CLI's subcommands: each parses its own arguments and returns an exit code. */
import { artifactCommand } from "./artifact-command.js";
import { batchCommand } from "./batch-command.js";
import { callCommand } from "./call.js";
import { demoCommand } from "./demo-command.js";
import { doctorCommand } from "./doctor-command.js";
import { mcpCommand } from "./mcp-command.js";
import { notebookCommand } from "./notebook-command.js";
import { pythonCommand } from "./python-command.js";
import { runCommand } from "./run-command.js";

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
  artifact: artifactCommand,
  doctor: doctorCommand,
  demo: demoCommand,
  mcp: mcpCommand,
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
    "example:",
    `  nbagent call python '{"cells":[{"code":"1 + 1"}]}'`,
    "",
  ].join("\n");
}

/** `--help` or `-h` among a command's own arguments (before a `--`). */
export function asksForHelp(args: string[]): boolean {
  for (const a of args) {
    if (a === "--") return false;
    if (a === "--help" || a === "-h") return true;
  }
  return false;
}
