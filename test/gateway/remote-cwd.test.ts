/**
 * A kernel on another machine (a remote gateway) cannot enter this machine's working directory: the
 * session's first result says so, where the kernel works instead, and that this machine's files are
 * not visible to it (docs/backends.md, "Working directory on a remote gateway"). The other machine is
 * a jupyter_server under bubblewrap with the session's directory hidden by an empty tmpfs.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { findBwrap } from "../../src/kernel/index.js";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import { testSettings } from "../settings.js";
import { type JupyterServerHandle, startJupyterServer } from "./helpers.js";

const bwrap = findBwrap(process.env);
const home = mkdtempSync(join(tmpdir(), "nbagent-remote-cwd-"));
const hidden = join(home, "this-machine");
const cwd = join(hidden, "project");
let server: JupyterServerHandle;
let rt: Runtime;

before(async () => {
  if (!bwrap) return;
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(cwd, "data.csv"), "a,b\n1,2\n");
  server = await startJupyterServer({ wrap: [bwrap, "--dev-bind", "/", "/", "--tmpfs", hidden, "--"] });
  rt = createRuntime({
    settings: testSettings(),
    stateRoot: join(home, "state"),
    gateway: { url: server.url, token: server.token },
  });
});

after(async () => {
  await rt?.dispose();
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

test("a cwd missing on the gateway's machine is said once, with where the kernel works", {
  skip: !bwrap && "bubblewrap is missing",
}, async () => {
  const tool = createPythonTool({ cwd, runtime: rt, updateIntervalMs: 0 });
  const call = (code: string) => tool.execute("t", { cells: [{ code }] } as PythonParams);
  const first = await call("import os; print(os.getcwd()); print(os.path.exists('data.csv'))");
  const text = (first.content[0] as { text: string }).text;
  const [note, where, exists] = text.split("\n");
  assert.equal(
    note,
    `Note: This session's kernel runs on another machine (the gateway), where ${cwd} does not exist; it works in ${where} there. Files on this machine are not visible to it: read and write paths that exist on the gateway's machine.`,
  );
  assert.notEqual(where, cwd);
  assert.equal(exists, "False");
  assert.ok(!first.isError);
  const second = await call("1 + 1");
  assert.equal((second.content[0] as { text: string }).text, "2", "said once per session");
});
