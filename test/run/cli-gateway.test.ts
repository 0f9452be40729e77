/**
 * `nbagent gateway status | start | stop` (docs/backends.md, docs/cli.md): the text and exit codes a
 * person or a model sees, against a real jupyter_server in a state directory of the test's own.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { COMMANDS } from "../../src/cli/commands.js";
import { gatewayDir, stopLocalGateway } from "../../src/kernel/gateway/local-server.js";
import { processAlive } from "../../src/sys/proc.js";
import { createKernel } from "../gateway/local-server-client.js";
import { nbagent, PYTHON, tempDir } from "./helpers.js";

test("nbagent gateway: status (3 when not running), start, start again, status with kernels, --json, stop", async (t) => {
  const state = await tempDir("nbagent-cli-gw-");
  t.after(async () => {
    await stopLocalGateway({ python: PYTHON, stateRoot: state });
  });
  const env = { NBAGENT_STATE_DIR: state, NBAGENT_PYTHON: PYTHON };
  const dir = gatewayDir(state, PYTHON);

  const none = await nbagent(["gateway", "status"], { env });
  assert.equal(none.code, 3);
  assert.equal(
    none.stdout,
    `The shared local gateway for ${PYTHON} is not running (start it: nbagent gateway start).\n`,
  );

  // Bad input: a usage error, and nothing is started.
  const bad = await nbagent(["gateway", "start", "--idle-cull", "soon"], { env });
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^nbagent gateway: --idle-cull takes whole seconds \(0 = never\), not 'soon'\nusage: /,
  );
  assert.equal((await nbagent(["gateway", "status"], { env })).code, 3);
  const unknown = await nbagent(["gateway", "restart"], { env });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown action 'restart' \(status, start or stop\)/);

  const started = await nbagent(["gateway", "start", "--idle-cull", "120"], { env });
  assert.equal(started.code, 0, started.stderr);
  const info = JSON.parse(readFileSync(`${dir}/info.json`, "utf8"));
  assert.ok(!started.stdout.includes(info.token), "the token is not printed");
  assert.equal(
    started.stdout.replace(/\d+s \(since [^)]+\)/, "<uptime>"),
    [
      `Started the shared local gateway for ${PYTHON}:`,
      `  url:         ${info.url}`,
      `  pid:         ${info.pid}`,
      `  interpreter: ${PYTHON}`,
      `  server:      jupyter_server ${info.serverVersion}`,
      "  uptime:      <uptime>",
      "  kernels:     0",
      "  idle cull:   kernels idle 120 s with no client are shut down",
      `  log:         ${dir}/server.log`,
      `  token:       in ${dir}/info.json (yours only); --show-token prints it`,
      "",
    ].join("\n"),
  );

  const again = await nbagent(["gateway", "start"], { env });
  assert.equal(again.code, 0);
  assert.match(
    again.stdout,
    new RegExp(
      `^The shared local gateway for ${PYTHON} was already running:\\n  url: +${info.url}\\n  pid: +${info.pid}\\n`,
    ),
  );

  await createKernel(info);
  const status = await nbagent(["gateway", "status"], { env });
  assert.equal(status.code, 0);
  assert.match(status.stdout, new RegExp(`^The shared local gateway is running for ${PYTHON}:\\n`));
  assert.match(status.stdout, /\n {2}kernels: {5}1\n/);
  assert.match(status.stdout, /\n {2}uptime: {6}(\d+m )?\d+s \(since \d{4}-/);

  const json = JSON.parse((await nbagent(["gateway", "status", "--json"], { env })).stdout);
  assert.equal(json.running, true);
  assert.equal(json.pid, info.pid);
  assert.equal(json.kernels, 1);
  assert.equal(json.idleCullSeconds, 120);
  assert.equal("token" in json, false);
  const shown = JSON.parse((await nbagent(["gateway", "status", "--json", "--show-token"], { env })).stdout);
  assert.equal(shown.token, info.token);

  const stopped = await nbagent(["gateway", "stop"], { env });
  assert.equal(stopped.code, 0);
  assert.equal(
    stopped.stdout,
    `Stopped the shared local gateway for ${PYTHON} (pid ${info.pid}, ${info.url}); 1 kernel shut down with it.\n`,
  );
  assert.equal(processAlive(info.pid), false);
  const after = await nbagent(["gateway", "status", "--json"], { env });
  assert.equal(after.code, 3);
  assert.deepEqual(JSON.parse(after.stdout), { running: false, python: PYTHON, others: [] });
  const twice = await nbagent(["gateway", "stop"], { env });
  assert.equal(twice.code, 0);
  assert.equal(twice.stdout, `No shared local gateway was running for ${PYTHON}; nothing to stop.\n`);
});

test("nbagent gateway: --help, a missing interpreter is an Error with exit 1", async () => {
  const help = await nbagent(["gateway", "--help"]);
  assert.equal(help.code, 0);
  assert.equal(help.stdout, (await COMMANDS.gateway.load()).help);
  const state = await tempDir("nbagent-cli-gw-");
  const missing = await nbagent(["gateway", "status", "--python", "/nonexistent/python3"], {
    env: { NBAGENT_STATE_DIR: state },
  });
  assert.equal(missing.code, 1);
  assert.equal(
    missing.stderr,
    "nbagent gateway: Error: Python interpreter /nonexistent/python3 (from option) did not run\n",
  );
});
