/**
 * The gateway backend against a real JupyterHub (docs/backends.md "JupyterHub"): a user's server
 * reached by its hub URL (`…/user/alice/`) and an API token, through the hub's proxy. What the model
 * reads when the server is not running, when the hub refuses the token, and that a call made while
 * the server starts waits for it; then the tools, named sessions, `nbagent run -j` and `kernels` on it;
 * and a token revoked while it is in use.
 * Skipped without jupyterhub, except under CI (scripts/setup.sh test installs it).
 */
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stdioServer, textOf } from "../mcp/helpers.js";
import { batch, type Json, nbagent, resultText, tempDir } from "../run/helpers.js";
import { findHub, type HubHandle, startHub } from "./hub.js";

const SKIP =
  findHub() || process.env.CI
    ? false
    : "jupyterhub is not installed (bash scripts/setup.sh test installs it)";

let hub: HubHandle;
let token: string;
let cwd: string;

before(async () => {
  if (SKIP) return;
  // The user's server re-checks a token with the hub after 1 s (not 5 minutes): a revoked token is
  // refused there soon after, so the revocation test need not outwait the server's cache.
  hub = await startHub({ gate: true, tokenCacheSeconds: 1 });
  token = await hub.userToken();
  cwd = await tempDir("nbagent-hub-");
});

after(async () => {
  await hub?.stop();
});

const env = (t = token) => ({ NBAGENT_GATEWAY_URL: hub.serverUrl, NBAGENT_GATEWAY_TOKEN: t });
const py = (code: string, extra: Record<string, unknown> = {}) => ({
  tool: "python",
  params: { cells: [{ code }], ...extra },
});

async function texts(
  calls: { tool: string; params: Record<string, unknown> }[],
  t?: string,
): Promise<string[]> {
  const { results, stderr } = await batch(cwd, calls, env(t));
  assert.equal(results.length, calls.length, stderr);
  return results.map((r: Json) => resultText(r));
}

test("a user server that is not running: the Error says so and how to start it", { skip: SKIP }, async () => {
  const [text] = await texts([py("print(1)")]);
  const root = hub.url;
  assert.equal(
    text,
    `Error: could not start the Python kernel: the JupyterHub user server of alice (${root}/user/alice) is not running (the hub answered POST /user/alice/api/kernels with HTTP 405 Method Not Allowed). Start it from the hub at ${root}/hub/spawn/alice (or with the hub's REST API: POST ${root}/hub/api/users/alice/server), then call again`,
  );
});

test("a token the hub refuses: the Error says to make a new one", { skip: SKIP }, async () => {
  const [text] = await texts([py("print(1)")], "not-a-token");
  assert.match(
    text,
    new RegExp(
      `^Error: could not start the Python kernel: the hub at ${hub.url}/hub refused the token \\(the hub answered POST /user/alice/api/kernels with HTTP \\d+[^)]*\\): it is not \\(or no longer\\) a valid token — revoked, expired, or of another hub\\. Make a new one at ${hub.url}/hub/token and pass it as NBAGENT_GATEWAY_TOKEN`,
    ),
  );
});

test("a call made while the user server starts waits for it, then runs", { skip: SKIP }, async () => {
  const started = await hub.api("POST", "users/alice/server");
  assert.equal(started.status, 202, "the hub holds the server in its starting state (the gate)");
  const call = texts([py("print(6 * 7)")]);
  // Released once the call asked the hub what became of the server (it is then waiting on the hub's
  // progress stream, or about to open it: a server ready by then is announced there at once). The
  // hub logs a request when it ends, so the progress request itself shows only after the release.
  const logged = hub.log().length;
  while (!/ GET \/hub\/api\/user \(alice@/.test(hub.log().slice(logged)))
    await new Promise((r) => setTimeout(r, 50));
  hub.release();
  const [text] = await call;
  assert.equal(text, "42");
});

test("on the running server: python calls, a named session across processes, kernels, and nbagent run -j 2", {
  skip: SKIP,
}, async () => {
  await hub.startServer();
  const [first, second] = await texts([py("x = 41"), py("print(x + 1)")]);
  assert.equal(first, "(no output)");
  assert.equal(second, "42");

  const [a] = await texts([py("y = 'kept'", { session: "hubbed" })]);
  assert.match(a, /named session "hubbed" is new: kernel [0-9a-f-]{36} was started for it on the gateway/);
  const [b] = await texts([py("print(y)", { session: "hubbed" })]);
  assert.match(b, /re-attached to its running kernel/);
  assert.match(b, /\nkept$/);

  const nbs = await Promise.all(
    [1, 2, 3].map(async (i) => {
      const path = join(cwd, `n${i}.ipynb`);
      await writeFile(
        path,
        JSON.stringify({
          cells: [
            {
              cell_type: "code",
              id: `c${i}`,
              metadata: {},
              source: `print(${i} * 10)`,
              outputs: [],
              execution_count: null,
            },
          ],
          metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
          nbformat: 4,
          nbformat_minor: 5,
        }),
      );
      return path;
    }),
  );
  const run = await nbagent(["run", "-j", "2", "--inplace", ...nbs], { cwd, env: env() });
  assert.equal(run.code, 0, run.stderr);
  const { readFile } = await import("node:fs/promises");
  for (const [i, path] of nbs.entries()) {
    const nb = JSON.parse(await readFile(path, "utf8"));
    assert.deepEqual(nb.cells[0].outputs, [
      { output_type: "stream", name: "stdout", text: [`${(i + 1) * 10}\n`] },
    ]);
  }
});

test("the user server stopped under a session, and stopped and started again between calls: each said in the next result", {
  skip: SKIP,
}, async () => {
  await hub.startServer();
  const server = await stdioServer([], { ...env(), NBAGENT_VIEW: "0" });
  const call = async (code: string) =>
    textOf(await server.client.callTool({ name: "python", arguments: { cells: [{ code }] } }));
  try {
    assert.equal(await call("z = 1; print(z)"), "1");
    // The hub stops the server (as its idle culler does): the kernel and its state go with it.
    await hub.stopServer();
    const down = await call("print(z)");
    // The host hears of it before this call (the socket closed, the hub answered its reconnect) or
    // while the call's cell is sent: either way the text says what happened and how to go on.
    const stopped =
      "the JupyterHub user server of alice was stopped \\(by the hub's idle culler, an admin or a person\\), and its kernels with it\\)";
    const notRunning = `the JupyterHub user server of alice \\(${hub.url}/user/alice\\) is not running \\(the hub answered POST /user/alice/api/kernels with HTTP 405 Method Not Allowed\\)\\. Start it from the hub at ${hub.url}/hub/spawn/alice`;
    assert.match(
      down,
      new RegExp(
        `^(Error: This session's kernel died since the last call at \\d\\d:\\d\\d:\\d\\d \\(${stopped}, and its state \\(variables, imports\\) is gone\\. A new kernel could not be started: ${notRunning}|The kernel died while cell 1 ran \\(${stopped}, and restarting it failed \\(${notRunning}[^]*Cell 1 was not run again; all state is gone\\.$)`,
      ),
    );
    // Started again: the next call gets a new kernel on it, and works.
    await hub.startServer();
    assert.match(await call("print(z)"), /NameError: name 'z' is not defined/);
    assert.equal(await call("w = 7; print(w)"), "7");
    // Stopped and started again between two calls: the next result says the kernel died, and why.
    await hub.stopServer();
    await hub.startServer();
    const after = await call("print(w)");
    assert.match(
      after,
      /\nThis session's kernel had died since the last call \(at \d\d:\d\d:\d\d: the JupyterHub user server of alice was stopped \(by the hub's idle culler, an admin or a person\), and its kernels with it\); it was restarted before cell 1, and its earlier state is gone\.\n/,
    );
    assert.match(after, /NameError: name 'w' is not defined/);
  } finally {
    await server.client.close();
  }
});

test("a token revoked while in use: each next call says so, none waits, nothing on disk changes", {
  skip: SKIP,
}, async () => {
  await hub.startServer();
  const second = await hub.newToken();
  const revoked = env(second.token);
  const dir = await tempDir("nbagent-hub-revoked-");
  const nbs = [1, 2].map((i) => join(dir, `r${i}.ipynb`));
  for (const [i, path] of nbs.entries())
    await writeFile(
      path,
      JSON.stringify({
        cells: [
          {
            cell_type: "code",
            id: `r${i}`,
            metadata: {},
            source: `print(${i + 1})`,
            outputs: [],
            execution_count: null,
          },
        ],
        metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
        nbformat: 4,
        nbformat_minor: 5,
      }),
    );
  const calls = async (list: { tool: string; params: Record<string, unknown> }[]) => {
    const { results, stderr } = await batch(dir, list, revoked);
    assert.equal(results.length, list.length, stderr);
    return results.map((r: Json) => resultText(r));
  };

  // The second token works: notebooks run, a named session is made, an MCP session's kernel runs.
  const ran = await nbagent(["run", "-j", "2", "--inplace", ...nbs], { cwd: dir, env: revoked });
  assert.equal(ran.code, 0, ran.stderr);
  const [made, nbRun] = await calls([
    py("q = 5", { session: "kept" }),
    { tool: "notebook", params: { action: "run", notebook_path: "r1.ipynb", all: true } },
  ]);
  const keptId = /named session "kept" is new: kernel ([0-9a-f-]{36}) was started/.exec(made)?.[1];
  assert.ok(keptId, made);
  assert.match(nbRun, /^Ran 1 of 1 code cell/);
  const onDisk = async () =>
    Promise.all((await readdir(dir)).sort().map(async (f) => [f, await readFile(join(dir, f), "utf8")]));
  const before = await onDisk();

  const root = hub.url;
  const refused = (request: string) =>
    `the hub at ${root}/hub refused the token (the hub answered ${request} with HTTP 403 Forbidden): it is not (or no longer) a valid token — revoked, expired, or of another hub. Make a new one at ${root}/hub/token and pass it as NBAGENT_GATEWAY_TOKEN (or --gateway-token-file)`;
  const lost = `the hub at ${root}/hub no longer accepts the token (revoked or expired; make a new one at ${root}/hub/token and pass it as NBAGENT_GATEWAY_TOKEN), so nbagent can no longer reach the kernel, which is left running on the user's server until it is stopped there`;
  // Two MCP sessions on the token: one runs a cell when it is revoked, the other is idle then.
  const server = await stdioServer([], { ...revoked, NBAGENT_VIEW: "0" });
  const idle = await stdioServer([], { ...revoked, NBAGENT_VIEW: "0" });
  const callOn = async (on: typeof server, code: string) =>
    textOf(await on.client.callTool({ name: "python", arguments: { cells: [{ code }] } }));
  const call = (code: string) => callOn(server, code);
  try {
    assert.equal(await call("z = 1; print(z)"), "1");
    // The idle session's kernel id (its connection file is kernel-ID.json on the server).
    const idleFile = await callOn(
      idle,
      "w = 2\nimport os, ipykernel.connect as c\nprint(os.path.basename(c.get_connection_file()))",
    );
    const idleId = /^kernel-([0-9a-f-]{36})\.json$/.exec(idleFile)?.[1];
    assert.ok(idleId, idleFile);
    // A cell that never ends runs on the kernel's open WebSocket when the token is revoked.
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const forever = server.client.callTool(
      {
        name: "python",
        arguments: {
          cells: [{ code: "import threading\nprint('waiting', flush=True)\nthreading.Event().wait()" }],
        },
      },
      undefined,
      {
        timeout: 600_000,
        onprogress: (p) => {
          if (p.message?.includes("waiting")) started();
        },
      },
    );
    await running;
    const logged = hub.log().length;
    assert.equal(await hub.revokeToken(second.id), 204);

    // The socket stays open, but nbagent's check of its kernel (GET /api/kernels/{id}, every 5 s) is
    // refused once the server's token cache lets the token go: the call ends then, with the cause.
    assert.equal(
      textOf(await forever),
      `waiting\nThe kernel died while cell 1 ran (${lost}), and restarting it failed (${refused("POST /user/alice/api/kernels")}); the next call tries to start a new kernel. Cell 1 was not run again; all state is gone.`,
    );
    assert.equal(
      await call("print(z)"),
      `Error: could not start the Python kernel: ${refused("POST /user/alice/api/kernels")}`,
    );
    // The idle session's kernel is lost the same way, between calls: once nbagent has (after its
    // refused check) asked the server to stop that kernel — refused too — its next call says so.
    const deleted = new RegExp(` 403 DELETE /user/alice/api/kernels/${idleId} `);
    while (!deleted.test(hub.log().slice(logged))) await new Promise((r) => setTimeout(r, 50));
    assert.equal(
      (await callOn(idle, "print(w)")).replace(/ at \d\d:\d\d:\d\d /, " at HH:MM:SS "),
      `Error: This session's kernel died since the last call at HH:MM:SS (${lost}), and its state (variables, imports) is gone. A new kernel could not be started: ${refused("POST /user/alice/api/kernels")}`,
    );
    assert.equal(
      await callOn(idle, "print(w)"),
      `Error: could not start the Python kernel: ${refused("POST /user/alice/api/kernels")}`,
    );
  } finally {
    await server.client.close();
    await idle.client.close();
  }

  // New processes: a new kernel, the named session, the notebook tool, nbagent run.
  assert.deepEqual(
    await calls([
      py("print(1)"),
      py("print(q)", { session: "kept" }),
      { tool: "notebook", params: { action: "run", notebook_path: "r2.ipynb", all: true } },
    ]),
    [
      `Error: could not start the Python kernel: ${refused("POST /user/alice/api/kernels")}`,
      `Error: could not start the Python kernel: ${refused(`GET /user/alice/api/kernels/${keptId}`)}`,
      `Error: could not start the notebook's kernel: ${refused("POST /user/alice/api/kernels")}`,
    ],
  );
  const run = await nbagent(["run", "-j", "2", "--inplace", ...nbs], { cwd: dir, env: revoked });
  assert.deepEqual(
    { code: run.code, stdout: run.stdout, stderr: run.stderr },
    {
      code: 1,
      stdout: "",
      stderr: `Error: ${refused("GET /user/alice/api/kernelspecs")}\nNothing was run.\n`,
    },
  );
  assert.deepEqual(await onDisk(), before, "the refused calls changed nothing in the notebooks' folder");

  // The named session's kernel is still on the server: with a valid token it is joined, its state kept.
  const { results } = await batch(dir, [py("print(q)", { session: "kept" })], env());
  const again = resultText(results[0]);
  assert.match(again, new RegExp(`re-attached to its running kernel ${keptId} on the gateway[^]*\\n5$`));
});
