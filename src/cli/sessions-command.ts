/**
 * `nbagent sessions [--json]`, `nbagent sessions kill NAME` and `nbagent sessions export NAME OUT`:
 * the named sessions (`--session NAME`)
 * kept on the gateway this process would use — NBAGENT_GATEWAY_URL / `--gateway URL`, else the
 * shared local gateway (docs/cli.md, docs/backends.md "Named sessions"). Listing never starts the
 * shared gateway: when it is not running, no named session is alive.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { localGatewayStatus } from "../kernel/gateway/local-server.js";
import { createRuntime, type Runtime, type Settings } from "../runtime/index.js";
import type { NamedSessionInfo } from "../runtime/named-sessions.js";
import { namedRecordPath, SessionRecord } from "../runtime/session-record.js";
import { inUnit, pluralBare } from "../sys/units.js";
import { exportSessionNotebook, exportText, SessionExportError } from "../tools/python/session-notebook.js";
import { errorText, failureText } from "../tools/types.js";
import type { Command } from "./command.js";
import { UsageError } from "./params.js";
import { parsedOrUsage } from "./usage.js";

const USAGE =
  "usage: nbagent sessions [--json] | nbagent sessions kill NAME | nbagent sessions export NAME OUT.ipynb";

const HELP = `nbagent sessions — list or end the named sessions kept on a gateway

${USAGE}

A named session (nbagent call/batch/python --session NAME) keeps its kernel on a gateway after the
command exits, so a later command with the same --session finds its variables. These are the
sessions of the gateway that --session would use: --gateway URL (or NBAGENT_GATEWAY_URL, token
NBAGENT_GATEWAY_TOKEN), else the shared local gateway of this interpreter (nbagent gateway status).
A session unused for 5 minutes is shut down by the next nbagent that looks (a later call on its
name then says its state is gone).

Listed: name, kernel id, state (idle, busy, …), idle time (since its last call ended), the kernel's
memory (resident, asked of an idle kernel) and its working directory.

options:
  --json         print [{"name","kernelId","state","idleSeconds","memoryBytes","cwd","gateway"}…]
  kill NAME      shut the session's kernel down; its state is gone, a later call on NAME starts fresh
  export NAME OUT.ipynb
                 write every cell the session ran (any process's calls, in order, with their outputs)
                 as a new notebook; a markdown cell marks where the kernel's state was lost. OUT must
                 not exist. Reads only the session's record in the state dir: no gateway is needed.

exit: 0 listed / ended / exported; 1 no such session (nothing recorded, for export), the file could not be written, or the gateway could not be reached; 2 usage.

examples:
  nbagent call python '{"cells":[{"code":"x = 41"}]}' --session s
  nbagent sessions
  nbagent sessions export s s.ipynb
  nbagent sessions kill s
`;

export const sessionsCommand: Command = {
  help: HELP,
  async run(args, settings) {
    const parsed = parsedOrUsage("sessions", USAGE, parse, args);
    if (parsed === undefined) return 2;
    if (parsed.export) return exportSession(parsed.export.name, parsed.export.out, settings);
    let runtime: Runtime;
    try {
      // The gateway --session would use: the configured one, else the shared local gateway. It lists
      // and ends kernels and starts none, so the sandbox setting is not its business.
      runtime = createRuntime({
        settings,
        gateway: settings.gateway ? undefined : "shared",
        sandbox: false,
      });
    } catch (err) {
      process.stderr.write(`nbagent sessions: ${failureText(err)}\n`);
      return 2;
    }
    try {
      const where = await gatewayName(runtime, settings);
      if (where === undefined) {
        // The shared gateway is not running: nothing to list or kill (and nothing is started for it).
        if (parsed.kill !== undefined) {
          process.stderr.write(
            `${errorText(`no named session '${parsed.kill}': the shared local gateway is not running, so no named session is alive.`)}\n`,
          );
          return 1;
        }
        if (parsed.json) process.stdout.write("[]\n");
        else process.stdout.write("No named sessions: the shared local gateway is not running.\n");
        return 0;
      }
      if (parsed.kill !== undefined) return await kill(runtime, parsed.kill, where);
      const sessions = await runtime.namedSessions.list();
      if (parsed.json) {
        process.stdout.write(`${JSON.stringify(sessions.map((s) => asJson(s, where)))}\n`);
        return 0;
      }
      process.stdout.write(listText(sessions, where));
      return 0;
    } catch (err) {
      process.stderr.write(`${failureText(err)}\n`);
      return 1;
    } finally {
      await runtime.dispose();
    }
  },
};

/** `sessions export NAME OUT`: the named session's record as a new notebook (docs/cli.md). */
async function exportSession(name: string, out: string, settings: Settings): Promise<number> {
  const record = new SessionRecord(namedRecordPath(settings.stateRoot, name), false);
  if (record.isEmpty()) {
    process.stderr.write(
      `${errorText(`nothing recorded for named session '${name}': no cell has run with --session ${name} here (or its record was pruned by age with the artifacts). Nothing was written.`)}\n`,
    );
    return 1;
  }
  try {
    const exported = await exportSessionNotebook(record, resolve(out), out);
    process.stdout.write(`${exportText(exported, `named session '${name}'`)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof SessionExportError)) throw err;
    process.stderr.write(`${errorText(err.message)}\n`);
    return 1;
  }
}

async function kill(runtime: Runtime, name: string, where: string): Promise<number> {
  const before = await runtime.namedSessions.list();
  const found = before.find((s) => s.name === name);
  if (!found || !(await runtime.namedSessions.kill(name))) {
    const names = before.map((s) => s.name);
    const known = names.length ? `sessions: ${names.join(", ")}` : "there are none";
    process.stderr.write(`${errorText(`no named session '${name}' on ${where}; ${known}.`)}\n`);
    return 1;
  }
  process.stdout.write(
    `Ended session '${name}' (kernel ${found.kernelId}); its state is gone. A later call with --session ${name} starts a fresh kernel.\n`,
  );
  return 0;
}

/** The gateway in words; undefined when it is the shared local one and it is not running. */
async function gatewayName(runtime: Runtime, settings: Settings): Promise<string | undefined> {
  const place = runtime.kernels.place;
  if (place.kind === "remote") return `the gateway at ${place.url}`;
  const choice = runtime.choice;
  const info = await localGatewayStatus({
    python: "python" in choice ? choice.python : undefined,
    hostEnv: settings.env,
    interpreterCacheDir: settings.stateRoot,
    stateRoot: runtime.kernels.stateRoot,
  });
  if (!info) return undefined;
  return `the shared local gateway (${info.url}, ${info.python})`;
}

function listText(sessions: NamedSessionInfo[], where: string): string {
  if (sessions.length === 0) return `No named sessions on ${where}.\n`;
  const rows = [
    ["NAME", "KERNEL", "STATE", "IDLE", "MEMORY", "CWD"],
    ...sessions.map((s) => [
      s.name,
      s.kernelId,
      s.state,
      duration(s.idleMs),
      s.memoryBytes === undefined ? "-" : inUnit(s.memoryBytes, "MiB", 1),
      s.cwd,
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const lines = rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i])))
      .join("  ")
      .trimEnd(),
  );
  const n = sessions.length;
  return `${pluralBare(n, "named session")} on ${where}:\n${lines.join("\n")}\n`;
}

function asJson(s: NamedSessionInfo, gateway: string) {
  return {
    name: s.name,
    kernelId: s.kernelId,
    state: s.state,
    idleSeconds: Math.round(s.idleMs / 1000),
    memoryBytes: s.memoryBytes ?? null,
    cwd: s.cwd,
    createdAt: new Date(s.createdAt).toISOString(),
    gateway,
  };
}

/** 42s, 3m 05s, 2h 04m. */
export function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const [verb, name, ...extra] = positionals;
  if (verb === undefined) return { json: values.json === true, kill: undefined };
  if (verb === "export") {
    if (name === undefined || extra.length === 0)
      throw new UsageError("export needs the session's NAME and OUT.ipynb");
    if (extra.length > 1) throw new UsageError(`unexpected arguments: ${extra.slice(1).join(" ")}`);
    if (values.json) throw new UsageError("--json goes with the list, not with export");
    return { json: false, kill: undefined, export: { name, out: extra[0] } };
  }
  if (verb !== "kill")
    throw new UsageError(
      `unknown action '${verb}' (list with no action, kill NAME, or export NAME OUT.ipynb)`,
    );
  if (name === undefined) throw new UsageError("kill needs the session's NAME");
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  if (values.json) throw new UsageError("--json goes with the list, not with kill");
  return { json: false, kill: name };
}
