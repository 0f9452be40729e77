/**
 * Builds the tool objects every integration (CLI, MCP, pi) adapts, around one shared runtime.
 * The runtime owns the kernels; dispose() shuts them all down.
 */
import { DEFAULT_KERNELSPEC } from "../notebook/index.js";
import { createRuntime, type RuntimeOptions, type Settings } from "../runtime/index.js";
import { createArtifactTool } from "./artifact.js";
import { createNotebookTool } from "./notebook.js";
import { createNotebookExecutor } from "./notebook-executor.js";
import { createPythonTool } from "./python.js";
import { RunRegistry } from "./runs.js";
import { createRunsTool } from "./runs-tool.js";
import type { Tool } from "./types.js";

// biome-ignore lint/suspicious/noExplicitAny: a toolbox holds tools of different parameter/details types
export type AnyTool = Tool<any, any>;

export interface ToolboxOptions {
  /** The session's working directory: relative paths resolve against it. */
  cwd: string;
  /** The settings the edge resolved (runtime/settings.ts): the runtime's, and the wait budget. */
  settings: Settings;
  runtime?: Omit<RuntimeOptions, "settings">;
  /**
   * Seconds a python call or notebook run is waited for before it returns its output so far with a
   * run id and goes on in the background (default: the settings', NBAGENT_WAIT_SECONDS, else 50; docs/runs.md).
   */
  waitSeconds?: number;
}

export interface Toolbox {
  tools: AnyTool[];
  runtime: ReturnType<typeof createRuntime>;
  runs: RunRegistry;
  dispose(): Promise<void>;
}

export function createToolbox(options: ToolboxOptions): Toolbox {
  const runtime = createRuntime({ ...options.runtime, settings: options.settings });
  const runs = new RunRegistry(options.waitSeconds ?? options.settings.waitSeconds);
  const tools: AnyTool[] = [
    createNotebookTool({
      cwd: options.cwd,
      executor: createNotebookExecutor({ runtime, runs }),
      newNotebookKernel: async () => (await runtime.kernelSpecInfo()) ?? DEFAULT_KERNELSPEC,
    }) as AnyTool,
    createPythonTool({ cwd: options.cwd, runtime, runs }) as AnyTool,
    createArtifactTool({ artifacts: runtime.artifacts }) as AnyTool,
    createRunsTool({ runs }) as AnyTool,
  ];
  return { tools, runtime, runs, dispose: () => runtime.dispose() };
}
