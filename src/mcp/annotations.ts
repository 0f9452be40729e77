/**
 * MCP tool annotations, keyed by tool name (docs/mcp.md). MCP annotates a whole tool, not an
 * action, so a tool with any destructive action (the notebook's delete / clear_outputs) says so.
 * A tool missing here gets only its title: the MCP defaults (not read-only, may be destructive,
 * open world) are the cautious ones.
 */
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

const ANNOTATIONS: Record<string, Omit<ToolAnnotations, "title">> = {
  notebook: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  python: { readOnlyHint: false, openWorldHint: false },
  artifact: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  // wait only reads; interrupt stops a cell (the kernel keeps its state): not destructive
  runs: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
};

export function annotationsFor(name: string, title: string): ToolAnnotations {
  return { title, ...ANNOTATIONS[name] };
}
