/**
 * The notebook tool's descriptor (tools/descriptor.ts): in a toolbox its cells run, in the
 * runtime's kernels.
 */

import { DEFAULT_KERNELSPEC } from "../../notebook/index.js";
import type { ToolDescriptor } from "../descriptor.js";
import { sandboxRoots } from "../sandbox-paths.js";
import { createNotebookExecutor } from "./executor.js";
import { createNotebookTool, notebookToolInfo } from "./notebook.js";
import type { NotebookParams } from "./params.js";
import type { NotebookDetails } from "./types.js";

export const notebookDescriptor: ToolDescriptor<NotebookParams, NotebookDetails> = {
  ...notebookToolInfo,
  create: ({ cwd, runtime, runs }) =>
    createNotebookTool({
      cwd,
      executor: createNotebookExecutor({ runtime, runs }),
      newNotebookKernel: async (name) =>
        (await runtime.kernelSpecInfo(name)) ??
        (name === undefined ? DEFAULT_KERNELSPEC : unknownKernel(name)),
      roots: sandboxRoots(runtime.kernels.sandbox !== undefined, cwd),
      events: runtime.events,
    }),
};

/** A backend that cannot look kernelspecs up: a name cannot be checked, so it is not taken. */
function unknownKernel(name: string): never {
  throw new Error(`the kernel backend cannot list kernelspecs, so "${name}" cannot be checked`);
}
