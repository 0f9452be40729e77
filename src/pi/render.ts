/**
 * pi's renderCall/renderResult over src/render's views (docs/pi.md): each returns a component that
 * draws at the width pi gives at render time. While a call runs, its row is redrawn a few times a
 * second so the spinner and the running time move; the redraws stop when the call ends.
 */
import type { Theme, ToolDefinition, ToolRenderResultOptions } from "@mariozechner/pi-coding-agent";
import type { Component } from "@mariozechner/pi-tui";
import { type RenderedTool, renderToolCall, renderToolResult } from "../render/index.js";
import { LinesComponent } from "./component.js";
import { piRenderTheme } from "./theme.js";

type RenderContext = Parameters<NonNullable<ToolDefinition["renderCall"]>>[2];

/** How often a running call's row is redrawn. */
export const TICK_MS = 200;

/** What one tool row keeps between renders (pi's row-local `context.state`). */
interface RowState {
  nbagentStartedAt?: number;
  nbagentTicker?: ReturnType<typeof setInterval>;
}

export interface RenderHooks {
  /** Whether the call is still running (the redraws stop when it is not). */
  running(toolCallId: string): boolean;
}

export function renderCallComponent(
  tool: RenderedTool,
  args: unknown,
  theme: Theme,
  context: RenderContext,
): Component {
  const state = context.state as RowState;
  if (context.executionStarted) state.nbagentStartedAt ??= Date.now();
  const t = piRenderTheme(theme);
  return new LinesComponent((width) =>
    renderToolCall(tool, args, { width, expanded: context.expanded, theme: t }),
  );
}

export function renderResultComponent(
  tool: RenderedTool,
  result: { content: unknown; details?: unknown },
  options: ToolRenderResultOptions,
  theme: Theme,
  context: RenderContext,
  hooks: RenderHooks,
): Component {
  const state = context.state as RowState;
  state.nbagentStartedAt ??= Date.now();
  if (options.isPartial) tick(state, context, hooks);
  else stopTicking(state);
  const t = piRenderTheme(theme);
  const input = {
    content: result.content as Parameters<typeof renderToolResult>[1]["content"],
    details: result.details,
    isError: context.isError,
  };
  return new LinesComponent((width) =>
    renderToolResult(tool, input, {
      width,
      expanded: options.expanded,
      theme: t,
      // pi draws a result's images itself, under the row; the view names them.
      images: "none",
      partial: options.isPartial,
      now: Date.now(),
      startedAt: state.nbagentStartedAt,
    }),
  );
}

function tick(state: RowState, context: RenderContext, hooks: RenderHooks): void {
  if (state.nbagentTicker) return;
  const id = context.toolCallId;
  state.nbagentTicker = setInterval(() => {
    if (hooks.running(id)) context.invalidate();
    else stopTicking(state);
  }, TICK_MS);
  state.nbagentTicker.unref?.();
}

function stopTicking(state: RowState): void {
  if (state.nbagentTicker) clearInterval(state.nbagentTicker);
  state.nbagentTicker = undefined;
}
