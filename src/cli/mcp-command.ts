/**
 * `nbagent mcp [--cwd DIR] [--http [--port N] [--host H] [--allow-origin O]… [--allow-host H]…
 * [--max-sessions N] [--max-kernels N] [--idle-minutes M]]`: the tools as an MCP server, over stdio
 * (default) or Streamable HTTP at /mcp with a bearer token (docs/mcp.md).
 * The server code is loaded only when this command runs.
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { errorText, failureText } from "../tools/types.js";
import type { Command } from "./command.js";
import {
  DEFAULT_IDLE_MINUTES,
  DEFAULT_MAX_SESSIONS,
  httpLimits,
  RUNTIME_MAX_KERNELS,
} from "./mcp-http-settings.js";
import { version } from "./version.js";

export const DEFAULT_MCP_PORT = 8765;

const USAGE = `usage: nbagent mcp [--cwd DIR]                      MCP over stdio
       nbagent mcp --http [--port N] [--host H]      Streamable HTTP at http://H:N/mcp
                  [--allow-origin ORIGIN]... [--allow-host H]...
                  [--max-sessions N] [--max-kernels N] [--idle-minutes M] [--cwd DIR]
`;

const OPTIONS = `options:
  --cwd DIR          relative notebook paths and kernels start here (default: the current directory)
  --port N           default ${DEFAULT_MCP_PORT}; 0 picks a free port
  --host H           default 127.0.0.1
  --allow-origin O   a browser Origin allowed besides localhost/127.0.0.1/[::1] (repeatable)
  --allow-host H     a Host header served besides localhost/127.0.0.1/[::1] (DNS-rebinding
                     protection): a name (any port), name:port, or * for any (repeatable; also
                     NBAGENT_MCP_ALLOW_HOSTS=H1,H2). Bound to a non-loopback --host and no list
                     given, any Host is served
  --max-sessions N   MCP sessions open at once (default ${DEFAULT_MAX_SESSIONS}; NBAGENT_MCP_MAX_SESSIONS); one more
                     is refused at once (503)
  --max-kernels N    kernels each session keeps (default ${RUNTIME_MAX_KERNELS}; NBAGENT_MCP_MAX_KERNELS): the server
                     runs at most max-sessions x max-kernels kernels
  --idle-minutes M   a session without requests for M minutes is closed and its kernels shut
                     down (default ${DEFAULT_IDLE_MINUTES}; 0 never; NBAGENT_MCP_IDLE_MINUTES)
  --gateway URL      run the kernels on this Jupyter server or Enterprise Gateway (same as
                     NBAGENT_GATEWAY_URL; token NBAGENT_GATEWAY_TOKEN or --gateway-token-file F)
  HTTP needs "Authorization: Bearer <token>": NBAGENT_MCP_TOKEN, or a token printed on stderr at start.
  HTTP also serves nbagent view's page at /view, with a token of its own (its URL is logged at start).
`;

const HELP = `nbagent mcp — serve nbagent's tools (notebook, python, artifact, runs) to an MCP client

${USAGE}
${OPTIONS}
Over stdio the client starts this process and owns it: one runtime, whose kernels shut down when
stdin ends or on SIGTERM/SIGINT. Over HTTP each MCP session gets its own kernels; closing the
session (DELETE), leaving it without requests for --idle-minutes, or stopping the server shuts them
down. Progress notifications carry the running cell and its last output line; a cancelled request
interrupts the kernel (state kept); full outputs are resources artifact://<id>?offset=LINE&limit=LINES.
Rules: docs/mcp.md.

exit: 0 after a clean shutdown; 1 when the server cannot start (e.g. the port is taken); 2 on bad
options.

examples:
  nbagent mcp --cwd ~/project                            # what an MCP client starts (stdio)
  NBAGENT_MCP_TOKEN=secret nbagent mcp --http --port 8765
  nbagent mcp --http --max-sessions 2 --idle-minutes 10 --allow-host devbox.lan
  claude mcp add nbagent -- nbagent mcp                  # register it with Claude Code
`;

export const mcpCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let values: ReturnType<typeof parse>;
    try {
      values = parse(args);
    } catch (err) {
      process.stderr.write(`nbagent mcp: ${failureText(err)}\n\n${USAGE}${OPTIONS}`);
      return 2;
    }
    if (values.help) {
      process.stdout.write(HELP);
      return 0;
    }
    const log = (line: string) => process.stderr.write(`nbagent mcp: ${line}\n`);
    const cwd = resolve(values.cwd ?? process.cwd());
    if (!values.http) {
      const { serveStdio } = await import("../mcp/stdio.js");
      return serveStdio({ cwd, settings, version: version(), log });
    }
    const port = Number(values.port ?? DEFAULT_MCP_PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`nbagent mcp: ${errorText(`--port must be 0..65535, not '${values.port}'`)}\n`);
      return 2;
    }
    let limits: ReturnType<typeof httpLimits>;
    try {
      limits = httpLimits(values);
    } catch (err) {
      process.stderr.write(`nbagent mcp: ${failureText(err)}\n`);
      return 2;
    }
    const configured = process.env.NBAGENT_MCP_TOKEN?.trim();
    const token = configured || randomBytes(24).toString("base64url");
    const { serveHttp } = await import("../mcp/http.js");
    return serveHttp({
      cwd,
      settings,
      version: version(),
      host: values.host ?? "127.0.0.1",
      port,
      token,
      tokenGenerated: !configured,
      allowOrigins: values["allow-origin"] ?? [],
      ...limits,
      log,
    });
  },
};

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    options: {
      cwd: { type: "string" },
      http: { type: "boolean" },
      port: { type: "string" },
      host: { type: "string" },
      "allow-origin": { type: "string", multiple: true },
      "allow-host": { type: "string", multiple: true },
      "max-sessions": { type: "string" },
      "max-kernels": { type: "string" },
      "idle-minutes": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (positionals.length) throw new Error(`unexpected arguments: ${positionals.join(" ")}`);
  const httpOnly = [
    "port",
    "host",
    "allow-origin",
    "allow-host",
    "max-sessions",
    "max-kernels",
    "idle-minutes",
  ];
  const given = httpOnly.filter((k) => values[k as keyof typeof values] !== undefined);
  if (!values.http && given.length)
    throw new Error(
      `${given.map((k) => `--${k}`).join(", ")} go${given.length === 1 ? "es" : ""} with --http`,
    );
  return values;
}
