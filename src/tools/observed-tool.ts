/**
 * A tool whose calls are told to the runtime's events (docs/view.md, "Events"): call-started with
 * the parameters as given, call-ended with the result's texts exactly as the model gets them and
 * how many images came with them. The tool itself is unchanged.
 */
import type { EventBus } from "../runtime/events.js";
import type { Tool, ToolResult } from "./types.js";

/** Longest string a parameter keeps in an event (a person reads it; the call gets it whole). */
const MAX_PARAM_CHARS = 20_000;

let calls = 0;

export function observedTool<P, D>(tool: Tool<P, D>, events: EventBus): Tool<P, D> {
  return {
    ...tool,
    async execute(toolCallId, params, signal, onUpdate) {
      if (!events.active) return tool.execute(toolCallId, params, signal, onUpdate);
      const callId = `${process.pid}-${++calls}`;
      // hrtime, not performance.now(): the first use of `performance` loads node's perf_hooks, a
      // few ms of a short command (docs/architecture.md, "How the built command starts").
      const started = process.hrtime.bigint();
      events.emit({ type: "call-started", callId, tool: tool.name, params: clipped(params) });
      let result: ToolResult<D> | undefined;
      try {
        result = await tool.execute(toolCallId, params, signal, onUpdate);
        return result;
      } finally {
        const texts = result ? result.content.flatMap((c) => (c.type === "text" ? [c.text] : [])) : [];
        events.emit({
          type: "call-ended",
          callId,
          tool: tool.name,
          durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
          texts,
          images: result ? result.content.filter((c) => c.type === "image").length : 0,
          // No result: the tool threw (its adapter words that failure).
          isError: result ? result.isError === true : true,
        });
      }
    },
  };
}

/** The parameters with every long string cut to MAX_PARAM_CHARS (a copy; JSON values only). */
function clipped(value: unknown, depth = 0): unknown {
  if (typeof value === "string")
    return value.length > MAX_PARAM_CHARS ? value.slice(0, MAX_PARAM_CHARS) : value;
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => clipped(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clipped(v, depth + 1)]));
}
