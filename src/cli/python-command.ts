/**
 * `nbagent python [-c CODE | FILE | -]`: the python tool for a person. The code runs as one cell in
 * a kernel and its output streams in as it comes, in the view the model's result is drawn with;
 * Ctrl-C interrupts the cell (a second one exits). On a terminal with no code: a small REPL on one
 * kernel (repl.ts). Exit codes: HELP below and docs/cli.md.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createToolbox } from "../tools/index.js";
import { pythonDescriptor } from "../tools/python/python.js";
import type { Command } from "./command.js";
import { NO_BOUND_SECONDS, sessionName, UsageError } from "./params.js";
import { runRepl } from "./repl.js";
import { runShownCall } from "./tool-view.js";
import { parsedOrUsage } from "./usage.js";

const USAGE =
  "usage: nbagent python [-c CODE | FILE | -] [--session NAME] [--gateway URL] [--cwd DIR] [--timeout S] [--json] [--expanded]";

const HELP = `nbagent python — run Python in a Jupyter kernel and watch its output stream in

${USAGE}

The code runs as one cell in an IPython kernel (%magics and !shell work); its output appears as it
comes, drawn as the python tool's result that an agent reads, then the closing lines (errors, what
did not run). CODE comes from -c, from FILE, or from stdin (-, or a pipe). On a terminal with no code,
a small REPL: each input runs in the same kernel, so variables stay; an input that ends in ':' or
leaves a bracket open goes on until an empty line; Ctrl-D (or exit) leaves.

Ctrl-C interrupts the running cell (the kernel keeps its state); a second Ctrl-C exits at once.

options:
  -c CODE        the code to run
  --session NAME run in the named session NAME: its kernel is kept on a gateway after this command
                 exits and a later python, call or batch with --session NAME finds its variables
                 (--gateway / NBAGENT_GATEWAY_URL; else the shared local gateway, started on
                 demand); nbagent sessions lists them. Default: a kernel of this command's own
  --gateway URL  run the kernel on this Jupyter server or Enterprise Gateway (same as
                 NBAGENT_GATEWAY_URL); its token from NBAGENT_GATEWAY_TOKEN or --gateway-token-file F
  --cwd DIR      the kernel's working directory (default: here)
  --timeout S    seconds the call may take (default: no bound; Ctrl-C stops it)
  --json         print the result as one object {"content":[…],"details":{…},"isError":bool}, as an
                 agent receives it, when the call ends (no streaming)
  --expanded     show long outputs whole instead of collapsed

exit: 0 the cell ran; 1 it failed (its text starts with the error); 2 usage;
      130/143 interrupted (SIGINT/SIGTERM) — in the REPL an interrupt only stops the cell.

examples:
  nbagent python -c 'import sys; print(sys.version)'
  nbagent python analysis.py
  echo 'print(6 * 7)' | nbagent python --json
  nbagent python                      # the REPL, on a terminal
  nbagent python --session work       # the REPL in a session that outlives it
`;

export const pythonCommand: Command = {
  help: HELP,
  async run(args, settings) {
    const parsed = parsedOrUsage("python", USAGE, parse, args);
    if (parsed === undefined) return 2;
    const { code, cwd, json, expanded } = parsed;
    const toolbox = createToolbox({
      settings,
      cwd,
      background: false,
      runtime: { sessionName: parsed.session },
    });
    const tool = toolbox.entry(pythonDescriptor);
    const base = { timeout: parsed.timeout ?? NO_BOUND_SECONDS };
    try {
      if (code === undefined) return await runRepl(tool, { base, expanded, json });
      return await runShownCall(tool, { ...base, cells: [{ code }] }, { json, expanded });
    } finally {
      await toolbox.dispose();
    }
  },
};

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      c: { type: "string", short: "c" },
      session: { type: "string" },
      cwd: { type: "string" },
      timeout: { type: "string" },
      json: { type: "boolean" },
      expanded: { type: "boolean" },
    },
  });
  if (positionals.length > 1) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
  if (values.c !== undefined && positionals.length)
    throw new UsageError("give the code once: -c CODE, or FILE, or -");
  let timeout: number | undefined;
  if (values.timeout !== undefined) {
    timeout = Number(values.timeout);
    if (!(timeout > 0) || timeout >= NO_BOUND_SECONDS)
      throw new UsageError(`--timeout must be a positive number of seconds, got ${values.timeout}`);
  }
  const source = values.c !== undefined ? "-c" : positionals[0];
  let code: string | undefined;
  if (source === "-c") code = values.c;
  else if (source === "-" || (source === undefined && !process.stdin.isTTY)) code = readFileSync(0, "utf8");
  else if (source !== undefined) {
    try {
      code = readFileSync(source, "utf8");
    } catch (err) {
      throw new UsageError(`cannot read ${source}: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  }
  return {
    code,
    timeout,
    session: values.session === undefined ? undefined : sessionName(values.session),
    cwd: resolve(values.cwd ?? process.cwd()),
    json: values.json === true,
    expanded: values.expanded === true,
  };
}
