/**
 * nbagent as a library: the toolbox every integration adapts (CLI, MCP server, pi extension), the
 * tool factories, and the runtime that owns the kernels. See README.md and docs/.
 */

export { createRuntime, type Runtime, type RuntimeOptions } from "./runtime/index.js";
export { createArtifactTool } from "./tools/artifact.js";
export { type AnyTool, createToolbox, type Toolbox, type ToolboxOptions } from "./tools/index.js";
export { createNotebookTool } from "./tools/notebook.js";
export { createNotebookExecutor } from "./tools/notebook-executor.js";
export { createPythonTool } from "./tools/python.js";
export { RunRegistry } from "./tools/runs.js";
export { createRunsTool } from "./tools/runs-tool.js";
export type { ImageContent, TextContent, Tool, ToolContent, ToolResult, ToolUpdate } from "./tools/types.js";
