/**
 * The CLI's subcommands: each parses its own arguments and returns an exit code. A command's module
 * is loaded only when that command runs (or its --help is asked for), so a short `nbagent call`
 * reads the code it needs and not the MCP server's, the renderers' or the notebook runner's.
 */
import type { SettingsFlags } from "../runtime/settings.js";

import type { CommandEntry } from "./command.js";

export type { Command, CommandEntry } from "./command.js";

export const COMMANDS: Record<string, CommandEntry> = {
  call: {
    summary: "run one tool call (any of the tools) and print its result",
    load: async () => (await import("./call.js")).callCommand,
  },
  batch: {
    summary: 'run JSON-lines tool calls from stdin in one process (shared kernels): {"tool":…,"params":{…}}',
    load: async () => (await import("./batch-command.js")).batchCommand,
  },
  python: {
    summary: "run Python in a kernel with its output streaming in; on a terminal with no code, a REPL",
    load: async () => (await import("./python-command.js")).pythonCommand,
  },
  notebook: {
    summary: "read, edit and run a notebook's cells (the notebook tool, drawn for a person)",
    load: async () => (await import("./notebook-command.js")).notebookCommand,
  },
  run: {
    summary: "run whole notebooks top to bottom in fresh kernels, writing outputs back (like nbclient)",
    load: async () => (await import("./run-command.js")).runCommand,
  },
  sessions: {
    summary: "list the named sessions (--session NAME) kept on the gateway, or `kill NAME` one",
    load: async () => (await import("./sessions-command.js")).sessionsCommand,
  },
  artifact: {
    summary: "print a full output kept as artifact://<id>, whole or a page at a time",
    load: async () => (await import("./artifact-command.js")).artifactCommand,
  },
  doctor: {
    summary: "report the Python interpreter nbagent will use and what is missing, with fixes",
    load: async () => (await import("./doctor-command.js")).doctorCommand,
  },
  demo: {
    summary: "edit and run a sample notebook in its kernel, saving outputs (a plot among them) [DIR]",
    load: async () => (await import("./demo-command.js")).demoCommand,
  },
  mcp: {
    summary: "serve the tools over MCP: stdio, or --http [--port N] [--host H] (bearer token)",
    load: async () => (await import("./mcp-command.js")).mcpCommand,
  },
  gateway: {
    summary: "status, start or stop the shared local gateway (the Jupyter server named sessions use)",
    load: async () => (await import("./gateway-command.js")).gatewayCommand,
  },
  view: {
    summary:
      "watch and steer every nbagent process of yours live, in the browser: view [--port N] [--no-open]",
    load: async () => (await import("./view-command.js")).viewCommand,
  },
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
    "--max-processes N (default 1024), --memory-limit SIZE (e.g. 2G; default none) and --cpus N (e.g. 1.5;",
    "default none) limit each local kernel (or NBAGENT_MAX_PROCESSES, NBAGENT_MEMORY_LIMIT, NBAGENT_CPUS;",
    "`off` for none); nbagent doctor shows them.",
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
 * `flags.sandbox` (its value is checked with the others by resolveSettings). Returns the remaining
 * arguments, or an error text (usage, exit 2).
 */
export function takeSandboxFlag(
  name: string,
  args: string[],
  flags: SettingsFlags,
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
  if (given !== undefined) flags.sandbox = given;
  return { args: rest };
}

/** The commands whose kernels the limits apply to (docs/isolation.md, "Limits"); doctor reports them. */
const LIMITED = new Set([...SANDBOXED, "doctor"]);

const LIMIT_FLAGS = {
  "--max-processes": "maxProcesses",
  "--memory-limit": "memoryLimit",
  "--cpus": "cpus",
} as const;

/**
 * Takes `--max-processes N`, `--memory-limit SIZE` and `--cpus N` (or `--flag=value`) out of a command's
 * arguments (before a `--`) into `flags` (their values are checked with the others by
 * resolveSettings). Returns the remaining arguments, or an error text (usage, exit 2).
 */
export function takeLimitFlags(
  name: string,
  args: string[],
  flags: SettingsFlags,
): { args: string[] } | { error: string } {
  const rest: string[] = [];
  const given: Partial<Record<keyof typeof LIMIT_FLAGS, string>> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    const flag = (Object.keys(LIMIT_FLAGS) as (keyof typeof LIMIT_FLAGS)[]).find(
      (f) => a === f || a.startsWith(`${f}=`),
    );
    if (!flag) {
      rest.push(a);
      continue;
    }
    if (!LIMITED.has(name)) return { error: `${flag} applies to ${[...LIMITED].join(", ")}, not to ${name}` };
    if (a === flag) {
      if (i + 1 >= args.length) return { error: `${flag} needs a value` };
      given[flag] = args[++i];
    } else given[flag] = a.slice(flag.length + 1);
  }
  for (const [flag, field] of Object.entries(LIMIT_FLAGS)) {
    const value = given[flag as keyof typeof LIMIT_FLAGS];
    if (value !== undefined) flags[field] = value;
  }
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
