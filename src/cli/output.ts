/** Turns a tool result into what the CLI prints. */
import { inUnit } from "../sys/units.js";
import type { ToolResult } from "../tools/types.js";

/** `--json`: exactly one object, the result as an agent would receive it. */
export function resultJson(result: ToolResult): string {
  return JSON.stringify({
    content: result.content,
    details: result.details ?? {},
    isError: result.isError === true,
  });
}

/** Plain mode: the text content; images as a one-line placeholder. */
export function resultText(result: ToolResult): string {
  const parts: string[] = [];
  for (const c of result.content) {
    if (c.type === "text") parts.push(c.text);
    else parts.push(`[${c.mimeType} image, ${inUnit((c.data.length * 3) / 4, "KiB")}]`);
  }
  return parts.join("\n");
}
