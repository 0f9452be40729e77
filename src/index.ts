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
export {
  type ArtifactParams,
  type ArtifactToolDetails,
  type ArtifactToolOptions,
  artifactDescriptor,
  createArtifactTool,
} from "./tools/artifact/artifact.js";
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
export {
  createKernelsTool,
  type KernelsDetails,
  type KernelsParams,
  kernelsDescriptor,
} from "./tools/kernels/kernels.js";
export { notebookDescriptor } from "./tools/notebook/descriptor.js";
export {
  createNotebookExecutor,
  type NotebookExecutorOptions,
  type NotebookRunCellDetails,
  type NotebookRunDetails,
} from "./tools/notebook/executor.js";
export {
  createNotebookTool,
  type NotebookDetails,
  type NotebookExecutor,
  type NotebookParams,
  type NotebookRunRequest,
  type NotebookToolOptions,
} from "./tools/notebook/notebook.js";
export {
  createPythonTool,
  type PythonParams,
  type PythonToolOptions,
  pythonDescriptor,
} from "./tools/python/python.js";
export type {
  CellStatus,
  PythonCellDetails,
  PythonCellOutputDetails,
  PythonImageDetails,
  PythonOutputDetails,
  PythonToolDetails,
} from "./tools/python/result.js";
export { type Run, type RunInfo, RunRegistry } from "./tools/runs/registry.js";
export { createRunsTool, type RunsParams, runsDescriptor } from "./tools/runs/runs.js";
export type { ImageContent, TextContent, Tool, ToolContent, ToolResult, ToolUpdate } from "./tools/types.js";
