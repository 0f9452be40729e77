/**
 * Adapts the tools (src/tools) to MCP, generically, from their descriptors: every tool the toolbox
 * holds is listed with its JSON schema, description and hints as annotations, and called with the
 * request's abort signal and a progress sink (docs/mcp.md). A tool's failure is an `isError` result
 * the model reads; a call that names no such tool is a protocol error. The ids a result's text
 * names go along as data in `_meta` (REFS_META), read from the result's details, not its text.
 */
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { ARTIFACT_SCHEME } from "../output/artifacts.js";
import type { DescribedTool, ToolEntry } from "../tools/index.js";
import { type ToolContent, type ToolResult, unexpectedFailureText } from "../tools/types.js";
import { protocolError } from "./errors.js";
import { ProgressTracker, type ProgressValue, throttle } from "./progress.js";
import { ErrorCode } from "./sdk.js";

/** At most this many progress notifications per second while a call runs. */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * `_meta` keys of a tools/call result: the artifact URIs its text names (each readable as a
 * resource) and the run id it gives (for the runs tool).
 */
export const REFS_META = { artifacts: "nbagent/artifacts", runId: "nbagent/runId" } as const;

export function listedTool(tool: DescribedTool): McpTool {
  return {
    name: tool.name,
    title: tool.label,
    description: tool.description,
    inputSchema: tool.parameters as unknown as McpTool["inputSchema"],
    annotations: { title: tool.label, ...tool.hints },
  };
}

export interface CallContext {
  requestId: string | number;
  signal: AbortSignal;
  /** Set when the client asked for progress (its progress token). */
  progress?: (value: ProgressValue) => void;
  /** Told about every `artifact://<id>` a result names. */
  onArtifact?: (id: string) => void;
  /** Unexpected failures (a tool that threw) are logged here. */
  log?: (line: string) => void;
}

export function mcpContent(content: ToolContent[]): CallToolResult["content"] {
  return content.map((c) =>
    c.type === "image"
      ? { type: "image", data: c.data, mimeType: c.mimeType }
      : { type: "text", text: (c as { text: string }).text },
  );
}

export async function callTool(
  entries: readonly ToolEntry[],
  name: string,
  args: Record<string, unknown> | undefined,
  ctx: CallContext,
): Promise<CallToolResult> {
  const entry = entries.find((e) => e.descriptor.name === name);
  if (!entry) {
    const names = entries.map((e) => e.descriptor.name).join(", ");
    throw protocolError(ErrorCode.InvalidParams, `Unknown tool '${name}'. Tools: ${names}.`);
  }
  const { descriptor, tool } = entry;
  let progress: ReturnType<typeof throttle<ProgressValue>> | undefined;
  let onUpdate: ((partial: ToolResult) => void) | undefined;
  if (ctx.progress) {
    progress = throttle(ctx.progress, PROGRESS_INTERVAL_MS);
    const tracker = new ProgressTracker();
    onUpdate = (partial) => progress?.push(tracker.next(partial));
  }
  let result: ToolResult;
  try {
    result = await tool.execute(`mcp-${ctx.requestId}`, args ?? {}, ctx.signal, onUpdate);
  } catch (err) {
    ctx.log?.(`tool ${name} threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return {
      content: [{ type: "text", text: unexpectedFailureText(name, err) }],
      isError: true,
    };
  } finally {
    progress?.stop();
  }
  const out: CallToolResult = { content: mcpContent(result.content) };
  if (result.isError) out.isError = true;
  const refs = descriptor.refs?.(result.details);
  if (refs) {
    for (const id of refs.artifacts) ctx.onArtifact?.(id);
    const meta: Record<string, unknown> = {};
    if (refs.artifacts.length)
      meta[REFS_META.artifacts] = refs.artifacts.map((id) => `${ARTIFACT_SCHEME}${id}`);
    if (refs.runId !== undefined) meta[REFS_META.runId] = refs.runId;
    if (Object.keys(meta).length) out._meta = meta;
  }
  return out;
}
