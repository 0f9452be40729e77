/** The CLI's subcommands: each parses its own arguments and returns an exit code. */
import { artifactCommand } from "./artifact-command.js";
import { batchCommand } from "./batch-command.js";
import { callCommand } from "./call.js";
import { demoCommand } from "./demo-command.js";
import { doctorCommand } from "./doctor-command.js";
import { mcpCommand } from "./mcp-command.js";
import { runCommand } from "./run-command.js";

export interface Command {
  summary: string;
  run(args: string[]): Promise<number>;
}

export const COMMANDS: Record<string, Command> = {
  call: callCommand,
  run: runCommand,
  batch: batchCommand,
  demo: demoCommand,
  doctor: doctorCommand,
  artifact: artifactCommand,
  mcp: mcpCommand,
};

export function usage(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: nbagent <command> [options]\n\ncommands:\n${rows.join("\n")}\n`;
}
