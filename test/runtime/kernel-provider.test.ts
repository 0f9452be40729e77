/**
 * Where kernels are made (docs/isolation.md "Where kernels are made"): every road gets its kernels
 * from one provider. Settings that cannot be honoured together (the sandbox with a gateway) are
 * refused with the same Error: text on every road, before anything starts (no backend, no shared
 * gateway, no kernel); the confinement and the limits reach the backend's startKernel.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { createLocalBackend, type KernelBackend, type KernelStartOptions } from "../../src/kernel/index.js";
import {
  createKernelProvider,
  createRuntime,
  SANDBOX_ON_GATEWAY,
  SANDBOX_ON_SHARED_GATEWAY,
} from "../../src/runtime/index.js";
import { runNotebooks } from "../../src/runtime/run-notebooks.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import { stdioServer, textOf } from "../mcp/helpers.js";
import { nbagent } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const home = mkdtempSync(join(tmpdir(), "nbagent-provider-"));
after(() => rmSync(home, { recursive: true, force: true }));
let n = 0;
/** A fresh folder under the test's home. */
function dir(name: string): string {
  const d = join(home, `${name}-${++n}`);
  return mkdtempSync(`${d}-`);
}

/** A port nothing listens on: any attempt to use the "gateway" fails (none is made). */
const NO_GATEWAY = "http://127.0.0.1:9";

const NOTEBOOK = JSON.stringify({
  cells: [{ cell_type: "code", id: "c0", execution_count: null, metadata: {}, outputs: [], source: "1 + 1" }],
  metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
  nbformat: 4,
  nbformat_minor: 5,
});

/** What the python tool says when its kernel's start is refused (the tool's words, then the refusal). */
const toolSays = (refusal: string) =>
  `Error: could not start the Python kernel: ${refusal.replace(/^Error: /, "")}`;

/** A real local backend that records every startKernel's options. */
function recording(): { backend: KernelBackend; starts: KernelStartOptions[] } {
  const real = createLocalBackend(localBackendOptions(testSettings()));
  const starts: KernelStartOptions[] = [];
  const backend: KernelBackend = {
    name: real.name,
    facts: real.facts,
    startKernel: (options) => {
      starts.push(options);
      return real.startKernel(options);
    },
    kernelSpecNames: (options) => real.kernelSpecNames(options),
    kernelSpecInfo: (name, options) => real.kernelSpecInfo!(name, options),
    dispose: () => real.dispose(),
  };
  return { backend, starts };
}

test("the provider refuses the sandbox on a remote gateway and on the shared one, knowing it when built", async () => {
  const stateRoot = dir("state");
  const remote = createKernelProvider({
    stateRoot,
    settings: testSettings({ NBAGENT_GATEWAY_URL: NO_GATEWAY }),
    sandbox: true,
  });
  assert.equal(remote.refusal, SANDBOX_ON_GATEWAY);
  await assert.rejects(remote.backend(), { message: SANDBOX_ON_GATEWAY });
  await assert.rejects(remote.startKernel({ cwd: home }), { message: SANDBOX_ON_GATEWAY });
  const viaEnv = createKernelProvider({
    stateRoot,
    sessionName: "s",
    settings: testSettings({ NBAGENT_SANDBOX: "net-off" }),
  });
  assert.equal(viaEnv.refusal, SANDBOX_ON_SHARED_GATEWAY);
  await assert.rejects(viaEnv.startKernel({ cwd: home }), { message: SANDBOX_ON_SHARED_GATEWAY });
  assert.equal(existsSync(join(stateRoot, "gateway")), false, "no shared gateway was started");
  // Local kernels may be sandboxed; a gateway without the sandbox is fine.
  assert.equal(
    createKernelProvider({ stateRoot, settings: testSettings({}), sandbox: true }).refusal,
    undefined,
  );
  assert.equal(
    createKernelProvider({ stateRoot, settings: testSettings({ NBAGENT_GATEWAY_URL: NO_GATEWAY }) }).refusal,
    undefined,
  );
});

test("the python tool through the runtime: the refusal is its Error: result, and nothing starts", async () => {
  const stateRoot = dir("state");
  const cases = [
    {
      options: { settings: testSettings({ NBAGENT_GATEWAY_URL: NO_GATEWAY }), sandbox: true },
      text: SANDBOX_ON_GATEWAY,
    },
    {
      options: { settings: testSettings({ NBAGENT_SANDBOX: "1" }), sessionName: "s" },
      text: SANDBOX_ON_SHARED_GATEWAY,
    },
  ];
  for (const { options, text } of cases) {
    const rt = createRuntime({ stateRoot, artifactMaxAgeMs: 0, ...options });
    try {
      assert.equal(rt.kernels.refusal, text);
      const tool = createPythonTool({ cwd: home, runtime: rt, updateIntervalMs: 0 });
      const result = await tool.execute("t", { cells: [{ code: "1 + 1" }] } as PythonParams);
      assert.equal(result.isError, true);
      const said = (result.content[0] as { text: string }).text;
      assert.equal(said.split("\n")[0], toolSays(text));
    } finally {
      await rt.dispose();
    }
  }
  assert.equal(existsSync(join(stateRoot, "gateway")), false, "no shared gateway was started");
});

/**
 * The state root is hidden first, then each folder nbagent keeps in it, so that a kernel whose working
 * directory is the root itself (which is then put back whole) still cannot see them: every folder
 * that exists there after the run must be in the list, and nothing outside the root.
 */
function assertStateHidden(hide: string[] | undefined, root: string): void {
  assert.ok(hide, "a confinement was given");
  assert.equal(hide[0], root);
  for (const p of hide.slice(1)) assert.equal(dirname(p), root, `${p} is a folder of the state root`);
  const made = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory());
  for (const e of made)
    assert.ok(hide.includes(join(root, e.name)), `the state folder ${e.name} is hidden too`);
}

test("every local kernel gets the confinement (state root hidden, its session's artifacts back) and the limits", async () => {
  const stateRoot = dir("state");
  const { backend, starts } = recording();
  const limits = { maxProcesses: 512, memoryBytes: 2 * 1024 ** 3 };
  const rt = createRuntime({
    stateRoot,
    artifactMaxAgeMs: 0,
    settings: testSettings({}),
    backend,
    limits,
  });
  try {
    const tool = createPythonTool({ cwd: home, runtime: rt, updateIntervalMs: 0 });
    const result = await tool.execute("t", { cells: [{ code: "print(6 * 7)" }] } as PythonParams);
    assert.notEqual(result.isError, true, (result.content[0] as { text: string }).text);
    assert.equal(starts.length, 1);
    assert.deepEqual(starts[0].confinement?.expose, [rt.artifacts.artifactsDir(rt.defaultSessionId)]);
    assertStateHidden(starts[0].confinement?.hide, rt.artifacts.root);
    assert.deepEqual(starts[0].limits, { ...limits, cpus: 0 });
    assert.equal(starts[0].sandbox, undefined);
  } finally {
    await rt.dispose();
    await backend.dispose();
  }

  // nbagent run's kernels: the state root hidden, no session's artifacts to put back.
  const rec = recording();
  const kernels = createKernelProvider({
    stateRoot,
    settings: testSettings({}),
    backend: rec.backend,
    limits,
  });
  const nbDir = dir("nb");
  writeFileSync(join(nbDir, "a.ipynb"), NOTEBOOK);
  try {
    const [r] = await runNotebooks({
      jobs: [{ input: join(nbDir, "a.ipynb"), output: join(nbDir, "a.ipynb") }],
      kernels,
    });
    assert.equal(r.error, undefined);
    assert.deepEqual(rec.starts[0].confinement?.expose, []);
    assertStateHidden(rec.starts[0].confinement?.hide, stateRoot);
    assert.deepEqual(rec.starts[0].limits, { ...limits, cpus: 0 });
    assert.equal(rec.starts[0].cwd, nbDir);
  } finally {
    await kernels.dispose();
    await rec.backend.dispose();
  }
});

test("nbagent run --sandbox --gateway URL is refused before any notebook is read or written", async () => {
  const d = dir("run");
  const nb = join(d, "nb.ipynb");
  writeFileSync(nb, NOTEBOOK);
  const state = dir("state");
  for (const [args, env] of [
    [["run", "--sandbox", "--gateway", NO_GATEWAY, nb], {}],
    [
      ["run", nb, "-o", join(d, "out.ipynb")],
      { NBAGENT_SANDBOX: "net-off", NBAGENT_GATEWAY_URL: NO_GATEWAY },
    ],
  ] as [string[], Record<string, string>][]) {
    const r = await nbagent(args, { env: { NBAGENT_STATE_DIR: state, ...env } });
    assert.equal(r.stderr, `Error: ${SANDBOX_ON_GATEWAY}\nNothing was run.\n`);
    assert.equal(r.code, 2);
  }
  assert.equal(readFileSync(nb, "utf8"), NOTEBOOK, "the notebook is unchanged");
  assert.equal(existsSync(join(d, "out.ipynb")), false, "no output was written");
});

test("nbagent call python with --sandbox on a gateway or a named session: the same Error:, nothing started", async () => {
  const state = dir("state");
  const params = JSON.stringify({ cells: [{ code: "1 + 1" }] });
  const env = { NBAGENT_STATE_DIR: state };
  const named = await nbagent(["call", "python", params, "--session", "s", "--sandbox"], {
    env,
    unset: ["NBAGENT_GATEWAY_URL"],
  });
  assert.equal(named.code, 1, named.stderr);
  assert.equal(named.stdout.split("\n")[0], toolSays(SANDBOX_ON_SHARED_GATEWAY));
  assert.equal(existsSync(join(state, "gateway")), false, "no shared gateway was started");
  const remote = await nbagent(["call", "python", params, "--sandbox", "--gateway", NO_GATEWAY], { env });
  assert.equal(remote.code, 1, remote.stderr);
  assert.equal(remote.stdout.split("\n")[0], toolSays(SANDBOX_ON_GATEWAY));
});

test("MCP: the python tool's result is the same refusal", async () => {
  const state = dir("state");
  const server = await stdioServer([], {
    NBAGENT_STATE_DIR: state,
    NBAGENT_SANDBOX: "1",
    NBAGENT_GATEWAY_URL: NO_GATEWAY,
  });
  try {
    const result = await server.client.callTool({
      name: "python",
      arguments: { cells: [{ code: "1 + 1" }] },
    });
    assert.equal(result.isError, true);
    assert.equal(textOf(result).split("\n")[0], toolSays(SANDBOX_ON_GATEWAY));
  } finally {
    await server.client.close();
  }
});
