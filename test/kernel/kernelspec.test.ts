// Kernelspec resolution: python3 for the chosen interpreter, named specs from JUPYTER_PATH (argv,
// env, interrupt_mode honoured), and a real kernel started from a named spec.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createLocalBackend, findInterpreter, type LocalBackend } from "../../src/kernel/index.js";
import { kernelSpecDirs, listKernelSpecNames, resolveKernelSpec } from "../../src/kernel/local/kernelspec.js";
import { describeFailure } from "../../src/tools/failure-text.js";

let backend: LocalBackend;
let jupyterPath: string;
let python: string;
/** The host environment the lookups are given: this process's, with JUPYTER_PATH set below. */
let env: Record<string, string | undefined>;

before(async () => {
  python = (await findInterpreter({ env: process.env })).path;
  jupyterPath = await mkdtemp(join(tmpdir(), "nbagent-kernelspec-"));
  const dir = join(jupyterPath, "kernels", "nbagent-test-spec");
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "kernel.json"),
    JSON.stringify({
      argv: ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
      display_name: "Test spec",
      language: "python",
      interrupt_mode: "message",
      env: { FROM_SPEC: "spec-env" },
    }),
  );
  env = { ...process.env, JUPYTER_PATH: jupyterPath };
  backend = createLocalBackend({ hostEnv: env });
});
after(() => backend.dispose());

test("python3 resolves to the chosen interpreter running ipykernel_launcher", async () => {
  const spec = await resolveKernelSpec("python3", undefined, { env });
  assert.deepEqual(spec.argv, [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]);
  assert.equal(spec.interruptMode, "signal");
});

test("a named spec comes from JUPYTER_PATH with its env and interrupt_mode; python option replaces argv[0]", async () => {
  assert.equal(kernelSpecDirs(python, env)[0], join(jupyterPath, "kernels"));
  assert.ok((await listKernelSpecNames(python, { env })).includes("nbagent-test-spec"));
  const spec = await resolveKernelSpec("nbagent-test-spec", python, { env });
  assert.equal(spec.argv[0], python);
  assert.equal(spec.interruptMode, "message");
  assert.deepEqual(spec.env, { FROM_SPEC: "spec-env" });
  assert.equal(spec.displayName, "Test spec");
  // without the option, the bare "python3" becomes the interpreter findInterpreter chose
  assert.equal((await resolveKernelSpec("nbagent-test-spec", undefined, { env })).argv[0], python);
});

test("a kernel started from the named spec gets the spec's env and is interrupted by message", async () => {
  const kernel = await backend.startKernel({ kernelName: "nbagent-test-spec", python });
  const r = await kernel.execute("import os\nprint(os.environ['FROM_SPEC'])");
  assert.equal(r.text, "spec-env\n");
  const controller = new AbortController();
  const interrupted = await kernel.execute("import time\nprint('z', flush=True)\ntime.sleep(60)", {
    signal: controller.signal,
    onChunk: () => controller.abort(),
  });
  assert.equal(interrupted.error?.name, "KeyboardInterrupt");
  assert.equal(interrupted.kernelRestarted, false);
});

/**
 * A kernelspec `name` whose kernel is `python -c <lines>`; its first line records each start in a
 * file, whose path is returned.
 */
async function scriptedSpec(name: string, lines: string[]): Promise<string> {
  const dir = join(jupyterPath, "kernels", name);
  const starts = join(jupyterPath, `${name}-starts.txt`);
  await mkdir(dir, { recursive: true });
  const code = [`open(${JSON.stringify(starts)}, "a").write("start\\n")`, ...lines].join("\n");
  const argv = ["python3", "-c", code, "{connection_file}"];
  await writeFile(join(dir, "kernel.json"), JSON.stringify({ argv, display_name: name, language: "python" }));
  return starts;
}

test("a kernel process that never answers is replaced after the stall time, then the start fails naming it", async () => {
  const starts = await scriptedSpec("nbagent-mute", [
    "import sys, time",
    'print("mute kernel here", file=sys.stderr, flush=True)',
    "time.sleep(60)",
  ]);
  await assert.rejects(
    backend.startKernel({ kernelName: "nbagent-mute", python, startStallMs: 1500, startTimeoutMs: 30_000 }),
    (e: unknown) => {
      assert.match(
        describeFailure(e),
        /^the kernel said nothing within 1500 ms of its start; its output:\nmute kernel here/,
      );
      return true;
    },
  );
  assert.equal(await readFile(starts, "utf8"), "start\nstart\nstart\n");
});

test("a kernel busy starting (using CPU) past the stall time is waited for, not replaced", async () => {
  // Spins for 3 s (twice the stall time), then becomes a real kernel.
  const starts = await scriptedSpec("nbagent-slow", [
    "import runpy, sys, time",
    "t = time.monotonic()",
    "while time.monotonic() - t < 3: pass",
    "sys.argv = ['ipykernel_launcher', '-f', sys.argv[1]]",
    "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)",
  ]);
  const kernel = await backend.startKernel({ kernelName: "nbagent-slow", python, startStallMs: 1500 });
  assert.equal((await kernel.execute("1+1")).displays[0]?.text, "2");
  assert.equal(await readFile(starts, "utf8"), "start\n", "one start: never replaced");
  await kernel.shutdown();
});
