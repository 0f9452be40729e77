/**
 * `nbagent call <tool> <params> [--cwd DIR] [--json]`: runs one tool call the way an agent would.
 * Exit codes (also in HELP and docs/cli.md): 0 success, 1 the tool returned an error result,
 * 2 usage (unknown tool, bad params), 130/143 interrupted.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { type AnyToolDescriptor, createToolbox, TOOL_DESCRIPTORS } from "../tools/index.js";
import { serveViewSocketLater } from "../view/host-later.js";
import type { Command } from "./command.js";
import { resultJson, resultText } from "./output.js";
import { readParams, sessionName, UsageError } from "./params.js";
import {
  interruptExitCode,
  OUTPUT_CLOSED_EXIT,
  stdoutClosed,
  withInterruptSignal,
  writeOutput,
} from "./posix-signals.js";
import { parsedOrUsage } from "./usage.js";

/** How long a call runs before its stdout is watched (withInterruptSignal). */
const WATCH_OUTPUT_AFTER_MS = 200;

const USAGE =
  "usage: nbagent call <tool> <params|@FILE|-> [--session NAME] [--gateway URL] [--cwd DIR] [--json]";

const HELP = `nbagent call — run one tool call the way an agent would and print its result

${USAGE}

<tool> is one of ${TOOL_DESCRIPTORS.map((d) => d.name).join(", ")}.
<params> is the call's JSON object: the text itself, @FILE (read from a file) or - (read from stdin).
The call has its own kernels, shut down when it exits; to let several calls share kernels (a
notebook's state, python sessions) use nbagent batch, or
--session NAME: the python tool's kernel is then kept on a gateway under NAME after the call exits,
and a later call with the same --session finds its variables (nbagent sessions lists them).
The call is waited for to its end and its whole result printed: nothing goes on in the background
after the process, so a "wait" parameter is ignored and only "timeout" bounds the call (python's
default 30 s, a notebook run's 60 s; docs/runs.md).

options:
  --session NAME  the python tool runs in the named session NAME, kept across calls and processes on
                  the gateway (--gateway / NBAGENT_GATEWAY_URL; else the shared local gateway,
                  started on demand; docs/backends.md)
  --gateway URL   run kernels on this Jupyter server or Enterprise Gateway (same as
                  NBAGENT_GATEWAY_URL); its token from NBAGENT_GATEWAY_TOKEN or
                  --gateway-token-file F
  --cwd DIR       the session's working directory; relative paths resolve against it (default: here)
  --json          print the result as one object {"content":[…],"details":{…},"isError":bool},
                  exactly as an agent receives it (default: the text; an image as a one-line
                  placeholder)

exit: 0 the result is not an error; 1 it is (isError; its text starts with Error:);
      2 usage (unknown tool, params not a JSON object); 130/143 interrupted (SIGINT/SIGTERM);
      141 stdout closed by its reader (EPIPE).

examples:
  nbagent call python '{"cells":[{"code":"x = 41"},{"code":"x + 1","title":"answer"}]}'
  nbagent call python '{"cells":[{"code":"x = 41"}]}' --session s    # then, from any later process:
  nbagent call python '{"cells":[{"code":"x + 1"}]}' --session s     # 42
  nbagent call notebook '{"action":"read","notebook_path":"a.ipynb"}' --json
  nbagent call artifact '{"id":"artifact://mb1x2k-0a1b2c3d4e","offset":201}'
`;

export const callCommand: Command = {
  help: HELP,
  async run(args, settings) {
    const parsed = parsedOrUsage("call", USAGE, parse, args);
    if (parsed === undefined) return 2;
    const { toolName, params, cwd, json, session } = parsed;
    // One call, then the process ends: nothing can go on in the background, so the call is waited
    // for to its end (its timeout bounds it; docs/runs.md).
    const toolbox = createToolbox({ cwd, settings, runtime: { sessionName: session }, background: false });
    // Its view socket opens if the call lasts (a read or edit ends first; view/host-later.ts).
    const view = serveViewSocketLater(toolbox, "call", cwd);
    try {
      const tool = toolbox.find(toolName)?.tool;
      if (!tool) {
        const names = toolbox.entries.map((e) => e.descriptor.name).join(", ");
        process.stderr.write(`nbagent call: unknown tool '${toolName}' (tools: ${names})\n`);
        return 2;
      }
      let interrupted: number | undefined;
      // stdout is watched for a reader that goes away (ending the call) only once the call has
      // lasted; a short one writes straight to the descriptor (posix-signals.ts writeOutput).
      const result = await withInterruptSignal((signal) => {
        signal.addEventListener("abort", () => {
          interrupted = interruptExitCode(signal);
        });
        return tool.execute(`cli-${process.pid}`, params, signal);
      }, WATCH_OUTPUT_AFTER_MS);
      writeOutput(`${json ? resultJson(result) : resultText(result)}\n`);
      // The reader closed stdout (EPIPE): end quietly (docs/cli.md).
      if (stdoutClosed()) return OUTPUT_CLOSED_EXIT;
      return interrupted ?? (result.isError ? 1 : 0);
    } finally {
      await view.close();
      await toolbox.dispose();
    }
  },
};

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { cwd: { type: "string" }, json: { type: "boolean" }, session: { type: "string" } },
  });
  const [toolName, paramsArg, ...extra] = positionals;
  if (!toolName) throw new UsageError("missing <tool>");
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const params = readParams(paramsArg);
  const session = values.session === undefined ? undefined : sessionName(values.session);
  // --session names the kernel session a tool's calls run in when they name none: for the tools
  // whose parameters take a session.
  const withSessions = TOOL_DESCRIPTORS.filter(takesSession).map((d) => d.name);
  if (session !== undefined && !withSessions.includes(toolName))
    throw new UsageError(
      `--session is for the ${withSessions.join(" and ")} tool (its kernel is kept under the name), not for ${toolName}`,
    );
  return {
    toolName,
    params,
    session,
    cwd: resolve(values.cwd ?? process.cwd()),
    json: values.json === true,
  };
}

function takesSession(descriptor: AnyToolDescriptor): boolean {
  const properties = (descriptor.parameters as { properties?: Record<string, unknown> }).properties;
  return properties !== undefined && "session" in properties;
}
