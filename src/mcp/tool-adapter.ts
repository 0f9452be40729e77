/**
 * Adapts the tool objects (src/tools) to MCP, generically: any tool the toolbox holds is listed with
 * its JSON schema, description and annotations, and called with the request's abort signal and a
 * progress sink (docs/mcp.md). A tool's failure is an `isError` result the model reads; a call that
 * names no such tool is a protocol error.
 */
import { type CallToolResult, ErrorCode, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { AnyTool } from "../tools/index.js";
import { type ToolContent, type ToolResult, unexpectedFailureText } from "../tools/types.js";
import { annotationsFor } from "./annotations.js";
import { protocolError } from "./errors.js";
import { ProgressTracker, type ProgressValue, throttle } from "./progress.js";

/** At most this many progress notifications per second while a call runs. */
export const PROGRESS_INTERVAL_MS = 250;

export function listedTool(tool: AnyTool): McpTool {
  return {
    name: tool.name,
    title: tool.label,
    description: tool.description,
    inputSchema: tool.parameters as unknown as McpTool["inputSchema"],
    annotations: annotationsFor(tool.name, tool.label),
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

const ARTIFACT_RE = /artifact:\/\/([A-Za-z0-9_-]{1,80})/g;

export function mcpContent(content: ToolContent[]): CallToolResult["content"] {
  return content.map((c) =>
    c.type === "image"
      ? { type: "image", data: c.data, mimeType: c.mimeType }
      : { type: "text", text: (c as { text: string }).text },
  );
}

export async function callTool(
  tools: AnyTool[],
  name: string,
  args: Record<string, unknown> | undefined,
  ctx: CallContext,
): Promise<CallToolResult> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) {
    const names = tools.map((t) => t.name).join(", ");
    throw protocolError(ErrorCode.InvalidParams, `Unknown tool '${name}'. Tools: ${names}.`);
  }
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
  if (ctx.onArtifact) {
    for (const c of result.content) {
      if (c.type !== "text") continue;
      for (const m of c.text.matchAll(ARTIFACT_RE)) ctx.onArtifact(m[1]);
    }
  }
  const out: CallToolResult = { content: mcpContent(result.content) };
  if (result.isError) out.isError = true;
  return out;
}
