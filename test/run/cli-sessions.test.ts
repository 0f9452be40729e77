/**
 * Named sessions through the built CLI (a private bundle of src/cli/main.ts, as installed): the
 * 41/42 example across two processes on a jupyter_server this test starts with its own token and
 * root dir (--gateway), `nbagent sessions` listing it, `sessions kill` and the re-call that says the
 * state is gone, the token from a file, bad and unreachable gateways; then the same example with no
 * gateway configured, on the shared local gateway started on demand. Each case has its own state dir.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { type JupyterServerHandle, startJupyterServer } from "../gateway/helpers.js";
import { type Json, nbagent, ROOT, tempDir, validate, writeNb } from "./helpers.js";

const exec = promisify(execFile);
const OUT = join(ROOT, "dist", `test-cli-sessions-${process.pid}`);
const BUNDLE = join(OUT, "nbagent.js");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node <bundle> ARGS` in cwd with env added (NBAGENT_GATEWAY_* removed unless given), stdin `input`. */
async function cli(args: string[], cwd: string, env: Record<string, string>, input = ""): Promise<Run> {
  const r = await nbagent(args, {
    cwd,
    input,
    bundle: BUNDLE,
    unset: ["NBAGENT_GATEWAY_URL", "NBAGENT_GATEWAY_TOKEN"],
    env: { NO_COLOR: "1", ...env },
  });
  return { code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const py = (code: string) => JSON.stringify({ cells: [{ code }] });

/** The kernel ids the server has now. */
async function serverKernels(server: JupyterServerHandle): Promise<string[]> {
  const res = await fetch(`${server.url}/api/kernels`, {
    headers: { Authorization: `token ${server.token}` },
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { id: string }[]).map((k) => k.id);
}

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs", "cli", OUT], { cwd: ROOT });
});
after(async () => {
  await rm(OUT, { recursive: true, force: true });
});

describe("nbagent --session and sessions on a gateway given with --gateway", () => {
  let server: JupyterServerHandle;
  let root: string;
  before(async () => {
    server = await startJupyterServer();
    root = await tempDir("nbagent-cli-sessions-");
  });
  after(async () => {
    await server?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("x = 41 then x + 1 from another process prints 42; sessions lists it; kill; the state is gone", async () => {
    const cwd = join(root, "work");
    await mkdir(cwd);
    const env = { NBAGENT_STATE_DIR: join(root, "state"), NBAGENT_GATEWAY_TOKEN: server.token };
    const gw = ["--gateway", server.url];

    const first = await cli(["call", "python", py("x = 41"), "--session", "s", ...gw], cwd, env);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    // nbagent's own credential is neither passed to the kernel nor offered to be let through.
    assert.doesNotMatch(first.stdout, /NBAGENT_GATEWAY_TOKEN|looks like a secret/);
    const id = /named session "s" is new: kernel ([0-9a-f-]{36}) was started for it on the gateway\./.exec(
      first.stdout,
    )?.[1];
    assert.ok(id, first.stdout);
    assert.deepEqual(await serverKernels(server), [id], "the kernel outlives the first process");

    // The token from a file this time (first line, trimmed), not from the environment.
    const tokenFile = join(root, "token");
    await writeFile(tokenFile, `${server.token}\n`);
    const gatewayVars = "import os\nsorted(k for k in os.environ if 'TOKEN' in k)";
    const leak = await cli(["call", "python", py(gatewayVars), "--session", "s", ...gw], cwd, env);
    assert.match(leak.stdout, /\n\[\]\n?$/, leak.stdout);
    const second = await cli(
      [
        "call",
        "python",
        py("x + 1"),
        "--session",
        "s",
        "--gateway",
        server.url,
        "--gateway-token-file",
        tokenFile,
      ],
      cwd,
      { NBAGENT_STATE_DIR: env.NBAGENT_STATE_DIR },
    );
    assert.equal(second.code, 0, second.stderr + second.stdout);
    assert.match(second.stdout, /\n42\n?$/);
    assert.ok(
      second.stdout.includes(
        `Note: named session "s" re-attached to its running kernel ${id} on the gateway: variables, imports and other state from earlier calls are there.`,
      ),
      second.stdout,
    );

    const list = await cli(["sessions", ...gw], cwd, env);
    assert.equal(list.code, 0, list.stderr);
    const lines = list.stdout.trimEnd().split("\n");
    assert.equal(lines[0], `1 named session on the gateway at ${server.url}:`);
    assert.match(lines[1], /^NAME +KERNEL +STATE +IDLE +MEMORY +CWD$/);
    assert.match(lines[2], new RegExp(`^s +${id} +idle +\\d+s +\\d+\\.\\d MiB +${cwd}$`));
    assert.equal(lines.length, 3);
    const json = await cli(["sessions", "--json", ...gw], cwd, env);
    assert.equal(json.code, 0, json.stderr);
    const [entry] = JSON.parse(json.stdout) as Json[];
    assert.equal(entry.name, "s");
    assert.equal(entry.kernelId, id);
    assert.equal(entry.state, "idle");
    assert.equal(entry.cwd, cwd);
    assert.ok(entry.memoryBytes > 1_000_000, JSON.stringify(entry));
    assert.equal(entry.gateway, `the gateway at ${server.url}`);

    const unknown = await cli(["sessions", "kill", "nope", ...gw], cwd, env);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr,
      `Error: no named session 'nope' on the gateway at ${server.url}; sessions: s.\n`,
    );
    assert.deepEqual(await serverKernels(server), [id], "a kill of an unknown name changes nothing");

    const kill = await cli(["sessions", "kill", "s", ...gw], cwd, env);
    assert.equal(kill.code, 0, kill.stderr);
    assert.equal(
      kill.stdout,
      `Ended session 's' (kernel ${id}); its state is gone. A later call with --session s starts a fresh kernel.\n`,
    );
    assert.deepEqual(await serverKernels(server), []);
    const none = await cli(["sessions", ...gw], cwd, env);
    assert.equal(none.stdout, `No named sessions on the gateway at ${server.url}.\n`);

    const again = await cli(["call", "python", py("x + 1"), "--session", "s", ...gw], cwd, env);
    assert.equal(again.code, 1, again.stderr);
    assert.match(
      again.stdout,
      /^Note: This session's kernel was ended at \d\d:\d\d:\d\d on request \(nbagent sessions kill\)\. This call runs in a new kernel: variables, imports and other state from earlier calls are gone\.\n/,
    );
    assert.match(again.stdout, /NameError: name 'x' is not defined/);
    const [fresh] = await serverKernels(server);
    assert.notEqual(fresh, id);
    await cli(["sessions", "kill", "s", ...gw], cwd, env);
  });

  it("a named session's cells from two processes: export_notebook, then sessions export from a third", async () => {
    const cwd = join(root, "export");
    await mkdir(cwd);
    const env = { NBAGENT_STATE_DIR: join(root, "state-export"), NBAGENT_GATEWAY_TOKEN: server.token };
    const gw = ["--gateway", server.url];
    const first = await cli(
      ["call", "python", py("x = 41\nprint('set')"), "--session", "e", ...gw],
      cwd,
      env,
    );
    assert.equal(first.code, 0, first.stderr + first.stdout);
    // The python tool's parameter, in a later process: both processes' cells, this call's after it ran.
    const second = await cli(
      [
        "call",
        "python",
        JSON.stringify({ cells: [{ code: "x + 1" }, { code: "1/0" }], export_notebook: "mid.ipynb" }),
        "--session",
        "e",
        ...gw,
      ],
      cwd,
      env,
    );
    assert.equal(second.code, 1, second.stderr);
    assert.match(
      second.stdout,
      /ZeroDivisionError[\s\S]*\nExported this session's 3 cells to mid\.ipynb \(with their outputs\)\.\n?$/,
    );
    assert.equal(await validate(join(cwd, "mid.ipynb")), "ok");

    const out = await cli(["sessions", "export", "e", "all.ipynb"], cwd, env);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(
      out.stdout,
      "Exported the 3 cells of named session 'e' to all.ipynb (with their outputs).\n",
    );
    assert.equal(await validate(join(cwd, "all.ipynb")), "ok");
    const nb = JSON.parse(await readFile(join(cwd, "all.ipynb"), "utf8"));
    assert.deepEqual(
      nb.cells.map((c: Json) => [c.source.join(""), c.outputs.map((o: Json) => o.output_type)]),
      [
        ["x = 41\nprint('set')", ["stream"]],
        ["x + 1", ["execute_result"]],
        ["1/0", ["error"]],
      ],
    );
    assert.equal(nb.cells[1].outputs[0].data["text/plain"].join(""), "42");
    assert.equal(nb.metadata.language_info.name, "python");

    const taken = await cli(["sessions", "export", "e", "all.ipynb"], cwd, env);
    assert.equal(taken.code, 1);
    assert.equal(
      taken.stderr,
      "Error: cannot export to all.ipynb: it already exists, and an export never replaces a file. Nothing was written; pass a new path.\n",
    );
    const unknown = await cli(["sessions", "export", "nope", "n.ipynb"], cwd, env);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr,
      "Error: nothing recorded for named session 'nope': no cell has run with --session nope here (or its record was pruned by age with the artifacts). Nothing was written.\n",
    );
    const usage = await cli(["sessions", "export", "e"], cwd, env);
    assert.equal(usage.code, 2);
    await cli(["sessions", "kill", "e", ...gw], cwd, env);
  });

  it("run --gateway -j 2: both notebooks run on the server's kernels", async () => {
    const dir = join(root, "run");
    await mkdir(dir);
    const a = await writeNb(join(dir, "a.ipynb"), [["code", "import os\nprint(os.getcwd())"]]);
    const b = await writeNb(join(dir, "b.ipynb"), [["code", "print('b')"]]);
    const r = await cli(["run", "-j", "2", "--gateway", server.url, a, b], dir, {
      NBAGENT_STATE_DIR: join(root, "state-run"),
      NBAGENT_GATEWAY_TOKEN: server.token,
    });
    assert.equal(r.code, 0, r.stderr);
    // The kernels ran on the server: the notebooks' folder is not under its root dir, so its root.
    const nb = JSON.parse(await readFile(a, "utf8"));
    assert.equal(nb.cells[0].outputs[0].text.join(""), `${server.rootDir}\n`);
    assert.deepEqual(await serverKernels(server), [], "run shuts its kernels down");
  });

  it("bad, unreachable and refusing gateways: Error: naming them, nothing started", async () => {
    const cwd = join(root, "bad");
    await mkdir(cwd);
    const env = { NBAGENT_STATE_DIR: join(root, "state-bad") };
    const notUrl = await cli(["call", "python", py("1"), "--gateway", "localhost"], cwd, env);
    assert.equal(notUrl.code, 2);
    assert.equal(
      notUrl.stderr,
      `nbagent call: Error: --gateway is not a URL: "localhost". Give the gateway's base URL, e.g. http://host:8888.\n`,
    );
    const fromEnv = await cli(["sessions"], cwd, { ...env, NBAGENT_GATEWAY_URL: "ftp://host" });
    assert.equal(fromEnv.code, 2);
    assert.match(
      fromEnv.stderr,
      /^nbagent sessions: Error: NBAGENT_GATEWAY_URL must be an http:\/\/ or https:\/\/ URL/,
    );
    const notFor = await cli(["doctor", "--gateway", server.url], cwd, env);
    assert.equal(notFor.code, 2);
    assert.match(
      notFor.stderr,
      /^nbagent doctor: Error: --gateway applies to call, batch, .*, not to doctor\n/,
    );

    // A port nobody listens on: the call's result names the gateway and what failed.
    const dead = "http://127.0.0.1:9";
    const unreachable = await cli(["call", "python", py("1"), "--gateway", dead], cwd, env);
    assert.equal(unreachable.code, 1);
    assert.match(
      unreachable.stdout,
      /^Error: .*could not reach the gateway at http:\/\/127\.0\.0\.1:9 \(POST \/api\/kernels\): .*ECONNREFUSED/,
    );
    const nb = await writeNb(join(cwd, "n.ipynb"), [["code", "1"]]);
    const run = await cli(["run", "--gateway", dead, nb], cwd, env);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^Error: could not reach the gateway at http:\/\/127\.0\.0\.1:9 \(GET \/api\/kernelspecs\): .*ECONNREFUSED.*\nNothing was run\.\n$/,
    );
    const sessions = await cli(["sessions", "--gateway", dead], cwd, env);
    assert.equal(sessions.code, 1);
    assert.match(sessions.stderr, /could not reach the gateway at http:\/\/127\.0\.0\.1:9/);

    // No token: the server refuses, and the text says so.
    const refused = await cli(["call", "python", py("1"), "--gateway", server.url], cwd, env);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stdout,
      new RegExp(`^Error: .*the gateway at ${server.url} answered POST /api/kernels with HTTP 403`),
    );
    const session = await cli(["call", "notebook", "{}", "--session", "s"], cwd, env);
    assert.equal(session.code, 2);
    assert.match(session.stderr, /^nbagent call: --session is for the python tool .*, not for notebook\n/);
    const badName = await cli(["call", "python", py("1"), "--session", "a b"], cwd, env);
    assert.equal(badName.code, 2);
    assert.match(badName.stderr, /^nbagent call: --session must be a name of letters, digits/);
    assert.deepEqual(await serverKernels(server), []);
  });
});

describe("nbagent --session with no gateway configured: the shared local gateway", () => {
  let root: string;
  before(async () => {
    root = await tempDir("nbagent-cli-shared-");
  });
  after(async () => {
    if (root) {
      await cli(["gateway", "stop"], root, { NBAGENT_STATE_DIR: join(root, "state") });
      await rm(root, { recursive: true, force: true });
    }
  });

  it("the 41/42 example; sessions names the shared gateway; listing never starts it", async () => {
    const env = { NBAGENT_STATE_DIR: join(root, "state") };
    const idle = await cli(["sessions"], root, env);
    assert.equal(idle.code, 0, idle.stderr);
    assert.equal(idle.stdout, "No named sessions: the shared local gateway is not running.\n");
    const status = await cli(["gateway", "status"], root, env);
    assert.doesNotMatch(status.stdout, /running at http/, "sessions did not start the gateway");

    const first = await cli(["call", "python", py("x = 41"), "--session", "s"], root, env);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const second = await cli(["call", "python", py("x + 1"), "--session", "s"], root, env);
    assert.equal(second.code, 0, second.stderr + second.stdout);
    assert.match(second.stdout, /\n42\n?$/);
    const list = await cli(["sessions"], root, env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(
      list.stdout,
      /^1 named session on the shared local gateway \(http:\/\/127\.0\.0\.1:\d+, \S+\):\n/,
    );
    assert.match(list.stdout, /\ns +[0-9a-f-]{36} +idle /);
    // batch: python calls that name no session run in it too.
    const line = JSON.stringify({ tool: "python", params: { cells: [{ code: "x * 2" }] } });
    const batch = await cli(["batch", "--session", "s"], root, env, `${line}\n`);
    assert.equal(batch.code, 0, batch.stderr);
    assert.match(JSON.parse(batch.stdout).content[0].text, /\n82$/);
    const kill = await cli(["sessions", "kill", "s"], root, env);
    assert.equal(kill.code, 0, kill.stderr);
  });
});
