/**
 * A kernel on a server given by URL keeps the environment its server gives it (docs/backends.md,
 * "What is sent"; docs/deploying.md): this machine's variables do not replace the server's (PATH,
 * HOME, an agent-only variable), only nbagent's session variables and the `KERNEL_*` ones cross —
 * a `KERNEL_*` one that looks like a secret is withheld and named in the first result — and the
 * python tool's description says so.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import { testSettings } from "../settings.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

const home = mkdtempSync(join(tmpdir(), "nbagent-remote-env-"));
const SECRET = "sk-agentsecret0123456789abcdef";
let server: JupyterServerHandle;
let rt: Runtime;

before(async () => {
  server = await startJupyterServer();
  // The agent's machine: variables of its own, a PATH and HOME the server does not have.
  const agentEnv = {
    ...process.env,
    NBAGENT_TEST_AGENT_ONLY: "here",
    PATH: `/agent-only-bin:${process.env.PATH}`,
    HOME: join(home, "agent-home"),
    KERNEL_USERNAME: "alice",
    KERNEL_API_TOKEN: SECRET,
  };
  rt = createRuntime({
    settings: testSettings(agentEnv),
    stateRoot: join(home, "state"),
    gateway: { url: server.url, token: server.token },
  });
});

after(async () => {
  await rt?.dispose();
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

test("a remote kernel keeps its server's environment; only KERNEL_* and nbagent's own variables cross", async () => {
  const tool = createPythonTool({ cwd: home, runtime: rt, updateIntervalMs: 0 });
  assert.match(
    tool.description,
    /The kernel keeps the environment its server gives it: this machine's variables are not passed \(only KERNEL_\*\nones, never one that looks like a secret\)\./,
  );
  assert.doesNotMatch(tool.description, /Host environment variables that look like secrets/);
  const code = [
    "import os, json",
    "print(json.dumps({k: os.environ.get(k) for k in ['NBAGENT_TEST_AGENT_ONLY', 'HOME', 'KERNEL_USERNAME', 'KERNEL_API_TOKEN', 'JUPYTER_CONFIG_DIR']}))",
    "print('/agent-only-bin' in os.environ['PATH'].split(':'), bool(os.environ.get('NBAGENT_ARTIFACTS')))",
  ].join("\n");
  const result = await tool.execute("t", { cells: [{ code }] } as PythonParams);
  const text = (result.content[0] as { text: string }).text;
  const lines = text.split("\n");
  assert.equal(
    lines[0],
    "Note: This host environment variable looks like a secret and was not passed to this session's kernel (os.environ does not have it): KERNEL_API_TOKEN. To let one through, the user must restart nbagent with NBAGENT_ALLOW_ENV=NAME[,NAME] in its environment.",
  );
  const seen = JSON.parse(lines[1]!);
  assert.deepEqual(seen, {
    NBAGENT_TEST_AGENT_ONLY: null,
    HOME: process.env.HOME ?? null,
    KERNEL_USERNAME: "alice",
    KERNEL_API_TOKEN: null,
    // The server's own (test/gateway/helpers.ts sets it for the server only).
    JUPYTER_CONFIG_DIR: seen.JUPYTER_CONFIG_DIR,
  });
  assert.ok(seen.JUPYTER_CONFIG_DIR?.includes("nbagent-jpserver-"), lines[1]);
  assert.equal(lines[2], "False True");
  assert.ok(!text.includes(SECRET));
});
