/**
 * A runtime and a python tool on one backend case, made before the suite's tests and disposed after
 * them: call inside `describe(backend.name, …)` (the tests that read outputs as the model does).
 */
import { join } from "node:path";
import { after, before } from "node:test";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createPythonTool } from "../../src/tools/python/python.js";
import type { BackendCase } from "../backends.js";
import { testSettings } from "../settings.js";

export interface PythonFixture {
  readonly rt: Runtime;
  readonly tool: ReturnType<typeof createPythonTool>;
}

/** State under `root`/state; the tool runs in `cwd` and sends every progress update at once. */
export function pythonToolOn(backend: BackendCase, dirs: { root: string; cwd: string }): PythonFixture {
  let rt: Runtime | undefined;
  let tool: ReturnType<typeof createPythonTool> | undefined;
  before(async () => {
    rt = createRuntime({
      settings: testSettings(),
      stateRoot: join(dirs.root, "state"),
      backend: await backend.create(),
    });
    tool = createPythonTool({ cwd: dirs.cwd, runtime: rt, updateIntervalMs: 0 });
  });
  after(async () => {
    await rt?.dispose();
    await backend.dispose();
  });
  return {
    get rt() {
      if (!rt) throw new Error("pythonToolOn: the runtime is made in before()");
      return rt;
    },
    get tool() {
      if (!tool) throw new Error("pythonToolOn: the tool is made in before()");
      return tool;
    },
  };
}
