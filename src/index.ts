/**
 * nbagent as a library: the toolbox every integration adapts (CLI, MCP server, pi extension), the
 * tools' descriptors and factories, and the runtime that owns the kernels. See README.md and docs/.
 * A host resolves its Settings once (resolveSettings(flags, its environment)) and passes them in.
 */

export { createRuntime, type Runtime, type RuntimeOptions } from "./runtime/index.js";
export {
  resolveSettings,
  type Settings,
  SettingsError,
  type SettingsFlags,
} from "./runtime/settings.js";
export { artifactDescriptor, createArtifactTool } from "./tools/artifact.js";
export {
  type AnyTool,
  type AnyToolDescriptor,
  createToolbox,
  type DescribedTool,
  describeTools,
  TOOL_DESCRIPTORS,
  type Toolbox,
  type ToolboxOptions,
  type ToolDescriptor,
  type ToolEntry,
} from "./tools/index.js";
export { createKernelsTool, kernelsDescriptor } from "./tools/kernels-tool.js";
export { createNotebookTool, notebookDescriptor } from "./tools/notebook.js";
export { createNotebookExecutor } from "./tools/notebook-executor.js";
export { createPythonTool, pythonDescriptor } from "./tools/python.js";
export { RunRegistry } from "./tools/runs.js";
export { createRunsTool, runsDescriptor } from "./tools/runs-tool.js";
export type { ImageContent, TextContent, Tool, ToolContent, ToolResult, ToolUpdate } from "./tools/types.js";
