import type { TSchema } from "@sinclair/typebox";

/** One piece of content a tool hands back to the model. */
export type TextContent = { type: "text"; text: string };
export type ImageContent = { type: "image"; data: string; mimeType: string };
export type ToolContent = TextContent | ImageContent;

/** What every tool returns: content for the model, structured details for renderers and hosts. */
export interface ToolResult<TDetails = unknown> {
  content: ToolContent[];
  details: TDetails;
  /** True when the call failed; the first text then starts with `Error:`. */
  isError?: boolean;
}

export type ToolUpdate<TDetails = unknown> = (partial: ToolResult<TDetails>) => void;

/**
 * A tool as a plain object (the shape pi-coding-agent and our MCP/CLI adapters consume).
 * `parameters` is a JSON Schema built with TypeBox.
 */
export interface Tool<TParams = unknown, TDetails = unknown> {
  name: string;
  label: string;
  description: string;
  parameters: TSchema;
  execute(
    toolCallId: string,
    params: TParams,
    signal?: AbortSignal,
    onUpdate?: ToolUpdate<TDetails>,
  ): Promise<ToolResult<TDetails>>;
}

/** Builds the `Error:` result every tool returns on bad input; nothing else is touched. */
export function errorResult<TDetails>(message: string, details: TDetails): ToolResult<TDetails> {
  const text = message.startsWith("Error:") ? message : `Error: ${message}`;
  return { content: [{ type: "text", text }], details, isError: true };
}
