import type { TSchema } from "@sinclair/typebox";
import { describeFailure } from "./failure-text.js";

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

/**
 * The one place in src/ that writes the `Error:` prefix: lower layers report failures as typed
 * errors whose message has none (kernel/errors.ts, runtime/errors.ts); tool results, the CLI's
 * stderr lines and the MCP/pi adapters all get their `Error:` text here.
 */
export function errorText(message: string): string {
  return isErrorText(message) ? message : `${ERROR_PREFIX} ${message}`;
}

const ERROR_PREFIX = "Error:";

/** The text is an `Error:` text (a failed result's first text, a CLI error line). */
export function isErrorText(text: string): boolean {
  return text.startsWith(ERROR_PREFIX);
}

/** What a caught failure says, as an `Error:` line (worded by failure-text.ts's describeFailure). */
export function failureText(err: unknown): string {
  return errorText(describeFailure(err));
}

/** A tool's execute threw (a bug, not a failure it reports): the text the MCP and pi adapters give. */
export function unexpectedFailureText(tool: string, err: unknown): string {
  return errorText(`the ${tool} tool failed unexpectedly: ${describeFailure(err)}`);
}

/** Builds the `Error:` result every tool returns on bad input; nothing else is touched. */
export function errorResult<TDetails>(message: string, details: TDetails): ToolResult<TDetails> {
  return { content: [{ type: "text", text: errorText(message) }], details, isError: true };
}
