/**
 * Named sessions on a real jupyter_server (docs/backends.md "Named sessions"): a later process
 * re-attaches by name and finds the state; the idle sweep, a kernel the server ended and a kill each
 * leave a record, so the next call says the state is gone, why and when; list shows state and memory.
 * Processes are real `node` processes running the python tool; the text the model reads is checked.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRuntime, Deadline, type Runtime } from "../../src/runtime/index.js";
import { createPythonTool } from "../../src/tools/python/python.js";
import { type JupyterServerHandle, startJupyterServer } from "../gateway/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-named-"));
const cwd = join(root, "work");
let server: JupyterServerHandle;
const runtimes: Runtime[] = [];

before(async () => {
  server = await startJupyterServer();
  writeFileSync(join(root, ".keep"), "");
  rmSync(cwd, { recursive: true, force: true });
  await promisify(execFile)("mkdir", ["-p", cwd]);
});
after(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()));
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

const fixture = fileURLToPath(new URL("./fixtures/named-child.ts", import.meta.url));

/** One python tool call in a separate nbagent process (it exits after the call). */
async function otherProcess(state: string, session: string, code: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", fixture, server.url, server.token, state, cwd, session, code],
    { timeout: 120_000 },
  );
  const r = JSON.parse(stdout.trim().split("\n").pop()!) as { text: string; isError: boolean };
  return r.text;
}

async function api(method: string, path: string): Promise<unknown> {
  const res = await fetch(`${server.url}/${path}`, {
    method,
    headers: { Authorization: `token ${server.token}` },
  });
  return res.status === 204 ? undefined : res.json();
}

async function kernelIds(): Promise<string[]> {
  return ((await api("GET", "api/kernels")) as { id: string }[]).map((k) => k.id);
}

function runtime(state: string, options: Partial<Parameters<typeof createRuntime>[0]> = {}): Runtime {
  const r = createRuntime({
    settings: testSettings(),
    stateRoot: state,
    gateway: { url: server.url, token: server.token },
    artifactMaxAgeMs: 0,
    ...options,
  });
  runtimes.push(r);
  return r;
}

async function call(rt: Runtime, session: string, code: string): Promise<string> {
  const tool = createPythonTool({ cwd, runtime: rt });
  const r = await tool.execute("call", { cells: [{ code }], session }, undefined, undefined);
  return r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

const NEW = (name: string, idle = "5 minutes") =>
  new RegExp(
    `Note: named session "${name}" is new: kernel ([0-9a-f-]{36}) was started for it on the gateway\\. It outlives this process: a later call with session "${name}" \\(from another nbagent process too\\) finds its state, until it is unused for ${idle} or ended with \`nbagent sessions kill ${name}\`\\.`,
  );
const CLOCK = "\\d\\d:\\d\\d:\\d\\d";
const GONE_STATE =
  "This call runs in a new kernel: variables, imports and other state from earlier calls are gone.";

function stateDir(name: string): string {
  return mkdtempSync(join(root, `${name}-`));
}

test("a named session outlives its process: a later process re-attaches and finds its variables", async () => {
  const state = stateDir("reattach");
  const first = await otherProcess(state, "s", "x = 41");
  const id = first.match(NEW("s"))?.[1];
  assert.ok(id, first);
  assert.ok((await kernelIds()).includes(id), "the kernel lives on after its process ended");

  const second = await otherProcess(state, "s", "x + 1");
  assert.ok(
    second.startsWith(
      `Note: named session "s" re-attached to its running kernel ${id} on the gateway: variables, imports and other state from earlier calls are there. It outlives this process:`,
    ),
    second,
  );
  assert.match(second, /^42$/m);
  assert.doesNotMatch(second, /is new|gone/);
});

test("the idle sweep shuts an unused named kernel down; the next call says its state is gone, why and when", async () => {
  const state = stateDir("idle");
  const id = (await otherProcess(state, "idle", "y = 1")).match(NEW("idle"))?.[1];
  assert.ok(id);
  // idle timeout 0: every named kernel not in use counts as idle (no clock games, no sleeps)
  const rt = runtime(state, { idleTimeoutMs: 0 });
  assert.deepEqual(await rt.namedSessions.sweep(), [{ name: "idle", why: "idle" }]);
  assert.ok(!(await kernelIds()).includes(id), "the sweep shut the kernel down on the gateway");

  const text = await call(rt, "idle", "y");
  assert.match(
    text,
    new RegExp(
      `^Note: This session's kernel was shut down at ${CLOCK} after \\d+ seconds? unused \\(kernels idle for 0 seconds are shut down\\)\\. ${GONE_STATE}\n`,
    ),
  );
  assert.match(text, NEW("idle", "0 seconds")); // this runtime's idle timeout
  assert.match(text, /NameError: name 'y' is not defined/);
});

test("a named kernel the server ended is reported gone, without a cause nbagent cannot know", async () => {
  const state = stateDir("gone");
  const id = (await otherProcess(state, "g", "z = 1")).match(NEW("g"))?.[1];
  assert.ok(id);
  await api("DELETE", `api/kernels/${id}`); // as the server's own culling, or its restart, would
  const text = await otherProcess(state, "g", "z");
  assert.match(
    text,
    new RegExp(
      `^Note: This session's kernel was no longer on the gateway when this call looked for it at ${CLOCK} \\(last used at ${CLOCK}\\); why it ended is not known here \\(the gateway may have culled it, or been restarted\\)\\. ${GONE_STATE}\n`,
    ),
  );
  const newId = text.match(NEW("g"))?.[1];
  assert.ok(newId && newId !== id, text);
  assert.match(text, /NameError: name 'z' is not defined/);
});

test("list shows each named session's kernel, idle time, state and memory (busy: no probe); kill ends one", async () => {
  const state = stateDir("list");
  const id = (await otherProcess(state, "calm", "a = 1")).match(NEW("calm"))?.[1];
  assert.ok(id);
  const holder = runtime(state);
  const lister = runtime(state);
  const flag = join(root, "release-busy");
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const busy = holder.withSession(
    { sessionId: "busy", cwd, named: "busy" },
    { deadline: new Deadline(120) },
    (lease) =>
      lease.execute(
        `import os, time\nprint("started", flush=True)\nwhile not os.path.exists(${JSON.stringify(flag)}): time.sleep(0.02)`,
        { onChunk: (t) => t.includes("started") && started() },
      ),
  );
  await running;
  const listed = await lister.namedSessions.list();
  writeFileSync(flag, "");
  assert.equal((await busy).status, "ok");

  assert.deepEqual(
    listed.map((s) => s.name),
    ["busy", "calm"],
  );
  const [b, c] = listed;
  assert.equal(b.state, "busy");
  assert.equal(b.memoryBytes, undefined);
  assert.equal(c.kernelId, id);
  assert.equal(c.state, "idle");
  assert.equal(c.cwd, cwd);
  assert.ok(c.idleMs >= 0);
  assert.ok(c.memoryBytes !== undefined && c.memoryBytes > 10 * 1024 * 1024, `memory ${c.memoryBytes}`);

  assert.equal(await lister.namedSessions.kill("calm"), true);
  assert.equal(await lister.namedSessions.kill("no-such-session"), false);
  assert.ok(!(await kernelIds()).includes(id));
  const text = await otherProcess(state, "calm", "a");
  assert.match(
    text,
    new RegExp(
      `^Note: This session's kernel was ended at ${CLOCK} on request \\(nbagent sessions kill\\)\\. ${GONE_STATE}\n`,
    ),
  );
  assert.ok(existsSync(join(state, "named-sessions")));
});

test("NBAGENT_GATEWAY_URL + NBAGENT_GATEWAY_TOKEN: kernels run on that server; an unnamed session ends with the runtime", async () => {
  const state = stateDir("env");
  const rt = createRuntime({
    stateRoot: state,
    artifactMaxAgeMs: 0,
    settings: testSettings({
      ...process.env,
      NBAGENT_GATEWAY_URL: `${server.url}/`,
      NBAGENT_GATEWAY_TOKEN: server.token,
    }),
  });
  assert.equal(rt.facts.namedSessions, true);
  assert.equal(rt.choice.kind === "remote" && rt.choice.connection.url, server.url);
  const before = await kernelIds();
  const tool = createPythonTool({ cwd, runtime: rt });
  const r = await tool.execute(
    "call",
    { cells: [{ code: "import os; print(os.getcwd()); print('NBAGENT_GATEWAY_TOKEN' in os.environ)" }] },
    undefined,
    undefined,
  );
  const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  assert.ok(text.includes(cwd), text);
  assert.doesNotMatch(text, /named session/); // no session named: an in-process session
  assert.match(text, /^False$/m); // the gateway's token never reaches the kernel
  const started = (await kernelIds()).filter((id) => !before.includes(id));
  assert.equal(started.length, 1, "the kernel runs on the configured server");
  await rt.dispose();
  assert.ok(!(await kernelIds()).includes(started[0]), "an unnamed session's kernel is shut down");
});

test("two processes starting the same new name at once end up on one kernel, recorded once", async () => {
  const state = stateDir("race");
  const [a, b] = await Promise.all([
    otherProcess(state, "both", "import os; os.getpid()"),
    otherProcess(state, "both", "import os; os.getpid()"),
  ]);
  const ids = [a, b].map((t) => t.match(/kernel ([0-9a-f-]{36})/)?.[1]);
  assert.ok(ids[0] && ids[0] === ids[1], `${a}\n---\n${b}`);
  const pids = [a, b].map((t) => t.match(/^(\d+)$/m)?.[1]);
  assert.equal(pids[0], pids[1], "both ran in the same kernel process");
  const rt = runtime(state);
  assert.deepEqual(
    (await rt.namedSessions.list()).map((s) => [s.name, s.kernelId]),
    [["both", ids[0]]],
  );
});
