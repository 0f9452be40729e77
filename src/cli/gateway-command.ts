/** `nbagent gateway status | start | stop`: the shared local gateway (docs/backends.md). */
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import {
  DEFAULT_IDLE_CULL_SECONDS,
  ensureLocalGateway,
  type LocalGatewayInfo,
  listLocalGateways,
  localGatewayKernelCount,
  localGatewayStatus,
  stopLocalGateway,
} from "../kernel/gateway/local-server.js";
import { findInterpreter } from "../kernel/interpreter.js";
import { filterSecrets } from "../runtime/env.js";
import type { Settings } from "../runtime/settings.js";
import { pluralBare } from "../sys/units.js";
import { failureText } from "../tools/types.js";
import type { Command } from "./command.js";

const USAGE =
  "usage: nbagent gateway status|start|stop [--python P] [--json] [--show-token] [--idle-cull SECONDS]";

const HELP = `nbagent gateway — the shared local gateway: one Jupyter server per interpreter that named sessions use

${USAGE}

The shared local gateway is a jupyter_server started from the chosen interpreter on 127.0.0.1 with a
random token, in the background. nbagent processes started later find it through a file in the
state directory (NBAGENT_STATE_DIR or $TMPDIR/nbagent-<uid>, gateway/<hash>/info.json, readable by
you only) and share it: \`--session NAME\` keeps a kernel there across processes. It is started on
demand, so \`start\` is only needed to choose its idle-kernel timeout or to start it ahead of time.
Its kernels get your environment without secrets (docs/secrets.md).

  status   is it running for this interpreter: url, pid, interpreter, uptime, kernels, log file
  start    start it (or find the running one) and say where it is
  stop     shut it down (its kernels end with it)

options:
  --python P           the interpreter (default: NBAGENT_PYTHON, an active VIRTUAL_ENV, ./.venv, python3)
  --json               the answer as one JSON object
  --show-token         also print the token (to connect another Jupyter client); it is never printed otherwise
  --idle-cull SECONDS  start: kernels idle this long with no client attached are shut down by the
                       server (default ${DEFAULT_IDLE_CULL_SECONDS}; 0 = never). A running server keeps its setting.

exit: status 0 running, 3 not running; start 0 running; stop 0 (says whether one was running);
1 error; 2 usage.

examples:
  nbagent gateway status
  nbagent gateway start --idle-cull 3600
  nbagent gateway stop
`;

interface Values {
  python?: string;
  json?: boolean;
  "show-token"?: boolean;
  "idle-cull"?: string;
}

function usageError(message: string): number {
  process.stderr.write(`nbagent gateway: ${message}\n${USAGE}\n`);
  return 2;
}

function uptime(startedAt: string, now = Date.now()): string {
  let s = Math.max(0, Math.round((now - Date.parse(startedAt)) / 1000));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const parts = [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s}s`].filter(Boolean);
  return parts.join(" ");
}

/** The public view of a gateway: everything but the token unless asked for. */
function view(info: LocalGatewayInfo, kernels: number | undefined, showToken: boolean) {
  const { token, ...rest } = info;
  return {
    running: true,
    ...rest,
    uptimeSeconds: Math.max(0, Math.round((Date.now() - Date.parse(info.startedAt)) / 1000)),
    kernels: kernels ?? null,
    ...(showToken ? { token } : {}),
  };
}

function describe(info: LocalGatewayInfo, kernels: number | undefined, showToken: boolean): string[] {
  const rows: [string, string][] = [
    ["url", info.url],
    ["pid", String(info.pid)],
    ["interpreter", info.python],
    ["server", `jupyter_server ${info.serverVersion ?? "(version unknown)"}`],
    ["uptime", `${uptime(info.startedAt)} (since ${info.startedAt})`],
    ["kernels", kernels === undefined ? "unknown (GET /api/kernels failed)" : String(kernels)],
    [
      "idle cull",
      info.idleCullSeconds ? `kernels idle ${info.idleCullSeconds} s with no client are shut down` : "off",
    ],
    ["log", info.logFile],
  ];
  const infoFile = join(dirname(info.logFile), "info.json");
  rows.push(["token", showToken ? info.token : `in ${infoFile} (yours only); --show-token prints it`]);
  return rows.map(([k, v]) => `  ${`${k}:`.padEnd(13)}${v}`);
}

async function status(python: string, values: Values, settings: Settings): Promise<number> {
  const info = await localGatewayStatus({ python, stateRoot: settings.stateRoot });
  const others = (await listLocalGateways({ stateRoot: settings.stateRoot })).filter(
    (g) => g.pid !== info?.pid,
  );
  if (!info) {
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ running: false, python, others: others.map((g) => ({ url: g.url, pid: g.pid, python: g.python })) })}\n`,
      );
    } else {
      const lines = [
        `The shared local gateway for ${python} is not running (start it: nbagent gateway start).`,
      ];
      for (const g of others)
        lines.push(`Running for another interpreter: ${g.python} at ${g.url} (pid ${g.pid}).`);
      process.stdout.write(`${lines.join("\n")}\n`);
    }
    return 3;
  }
  const kernels = await localGatewayKernelCount(info);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(view(info, kernels, values["show-token"] === true))}\n`);
  } else {
    const lines = [
      `The shared local gateway is running for ${python}:`,
      ...describe(info, kernels, values["show-token"] === true),
    ];
    for (const g of others)
      lines.push(`Also running for another interpreter: ${g.python} at ${g.url} (pid ${g.pid}).`);
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return 0;
}

async function start(python: string, values: Values, settings: Settings): Promise<number> {
  let idleCullSeconds = DEFAULT_IDLE_CULL_SECONDS;
  if (values["idle-cull"] !== undefined) {
    const n = Number(values["idle-cull"]);
    if (!/^\d+$/.test(values["idle-cull"].trim()) || !Number.isSafeInteger(n)) {
      return usageError(`--idle-cull takes whole seconds (0 = never), not '${values["idle-cull"]}'`);
    }
    idleCullSeconds = n;
  }
  const before = await localGatewayStatus({ python, stateRoot: settings.stateRoot });
  const info = await ensureLocalGateway({
    python,
    stateRoot: settings.stateRoot,
    env: filterSecrets(settings.env),
    pidNamespace: settings.pidNamespace,
    idleCullSeconds,
  });
  const fresh = before?.pid !== info.pid;
  const kernels = await localGatewayKernelCount(info);
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ ...view(info, kernels, values["show-token"] === true), started: fresh })}\n`,
    );
  } else {
    const head = fresh
      ? `Started the shared local gateway for ${python}:`
      : `The shared local gateway for ${python} was already running:`;
    const lines = [head, ...describe(info, kernels, values["show-token"] === true)];
    if (!fresh && values["idle-cull"] !== undefined && (info.idleCullSeconds ?? 0) !== idleCullSeconds) {
      lines.push(
        `Note: it keeps the idle cull it was started with; to change it: nbagent gateway stop, then start again.`,
      );
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  }
  return 0;
}

async function stop(python: string, values: Values, settings: Settings): Promise<number> {
  const before = await localGatewayStatus({ python, stateRoot: settings.stateRoot });
  const kernels = before ? await localGatewayKernelCount(before) : undefined;
  const stopped = await stopLocalGateway({ python, stateRoot: settings.stateRoot });
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ stopped, python, ...(before ? { pid: before.pid, url: before.url, kernels: kernels ?? null } : {}) })}\n`,
    );
  } else if (stopped) {
    const ended = kernels === undefined ? "" : `; ${pluralBare(kernels, "kernel")} shut down with it`;
    process.stdout.write(
      `Stopped the shared local gateway for ${python}${before ? ` (pid ${before.pid}, ${before.url})` : ""}${ended}.\n`,
    );
  } else {
    process.stdout.write(`No shared local gateway was running for ${python}; nothing to stop.\n`);
  }
  return 0;
}

export const gatewayCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let values: Values;
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args,
        allowPositionals: true,
        options: {
          python: { type: "string" },
          json: { type: "boolean" },
          "show-token": { type: "boolean" },
          "idle-cull": { type: "string" },
        },
      }));
    } catch (err) {
      return usageError((err as Error).message);
    }
    const [action, ...extra] = positionals;
    if (!action) return usageError("say status, start or stop");
    if (extra.length) return usageError(`unexpected argument '${extra[0]}'`);
    if (!["status", "start", "stop"].includes(action)) {
      return usageError(`unknown action '${action}' (status, start or stop)`);
    }
    if (values["idle-cull"] !== undefined && action !== "start") {
      return usageError("--idle-cull applies to start only");
    }
    let python: string;
    try {
      python = (
        await findInterpreter(
          values.python
            ? { python: values.python, cacheDir: settings.stateRoot }
            : { env: settings.env, cacheDir: settings.stateRoot },
        )
      ).path;
    } catch (err) {
      process.stderr.write(`nbagent gateway: ${failureText(err)}\n`);
      return 1;
    }
    try {
      if (action === "status") return await status(python, values, settings);
      if (action === "start") return await start(python, values, settings);
      return await stop(python, values, settings);
    } catch (err) {
      process.stderr.write(`nbagent gateway ${action}: ${failureText(err)}\n`);
      return 1;
    }
  },
};
