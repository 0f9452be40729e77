/**
 * Terminal views of nbagent's tools (docs/render.md): pure functions from a call's arguments or a
 * result to lines no wider than `width`, collapsed or expanded, in a theme's colours. Used by the
 * CLI and the pi extension. Each tool's view is registered by its descriptor (tools/descriptor.ts):
 * descriptors live a floor below, so the table that joins them to their views lives here.
 */
import { artifactDescriptor } from "../tools/artifact/artifact.js";
import type { AnyToolDescriptor } from "../tools/descriptor.js";
import { notebookDescriptor } from "../tools/notebook/descriptor.js";
import { pythonDescriptor } from "../tools/python/python.js";
import { runsDescriptor } from "../tools/runs/runs.js";
import { isErrorText, type ToolContent } from "../tools/types.js";
import { fit, type RenderOptions } from "./format.js";
import {
  artifactCallLines,
  artifactResultLines,
  genericCallLines,
  runsCallLines,
  runsResultLines,
  textResultLines,
} from "./misc-view.js";
import { errorBlock, notebookCallLines, notebookResultLines } from "./notebook-view.js";
import { isPythonDetails, pythonCallLines, pythonResultLines } from "./python-view.js";

export { RenderCache } from "./cache.js";
export type { ImageProtocol, RenderOptions } from "./format.js";
export { cellLanguage, type HighlightLanguage, highlightLines } from "./highlight.js";
export { detectImageProtocol, imagePlaceholder } from "./images.js";
export {
  ansiTheme,
  isPlain,
  plainTheme,
  type RenderTheme,
  THEME_ROLES,
  type ThemeRole,
  themeFromEnv,
} from "./theme.js";
export { cleanText, truncateToWidth, visibleWidth, wrapLine } from "./width.js";

export interface RenderableResult {
  content: ToolContent[] | ReadonlyArray<{ type: string; text?: string; data?: string; mimeType?: string }>;
  details?: unknown;
  isError?: boolean;
}

type Content = ReadonlyArray<{ type: string; text?: string; data?: string; mimeType?: string }>;

/** How one tool is drawn: its call, its result (or a partial one while it runs). */
export interface ToolView {
  call(args: unknown, o: RenderOptions): string[];
  result(
    content: Content,
    details: unknown,
    isError: boolean,
    o: RenderOptions & { partial?: boolean },
  ): string[];
  /**
   * The call runs several cells, each drawn under its own heading: a terminal redraws its progress
   * view in place instead of appending output (the CLI's StreamView).
   */
  inPlace?(args: unknown): boolean;
}

/** The views, by the descriptor of the tool they draw (object identity: tools/descriptor.ts). */
const VIEWS = new Map<AnyToolDescriptor, ToolView>();

/** Draws the tool of this descriptor with this view (a tool without one gets the plain view). */
export function registerToolView(descriptor: AnyToolDescriptor, view: ToolView): void {
  VIEWS.set(descriptor, view);
}

/** A tool as the renderers are told about it: its descriptor, or the name a recorded call gave. */
export type RenderedTool = AnyToolDescriptor | string;

function viewOf(tool: RenderedTool): ToolView | undefined {
  if (typeof tool !== "string") return VIEWS.get(tool);
  for (const [descriptor, view] of VIEWS) if (descriptor.name === tool) return view;
  return undefined;
}

const nameOf = (tool: RenderedTool) => (typeof tool === "string" ? tool : tool.name);

/** Whether the call's progress is drawn in place (ToolView.inPlace). */
export function drawsInPlace(tool: RenderedTool, args: unknown): boolean {
  return viewOf(tool)?.inPlace?.(args) === true;
}

registerToolView(notebookDescriptor, {
  call: notebookCallLines,
  result: notebookResultLines,
  inPlace: (args) => (args as { action?: unknown } | undefined)?.action === "run",
});
registerToolView(pythonDescriptor, {
  call: pythonCallLines,
  result(content, details, isError, o) {
    const text = textOf(content);
    return isPythonDetails(details) &&
      !(isError && isErrorText(text) && !details.cells.some((c) => c.status !== "pending"))
      ? pythonResultLines(text, details, content, o)
      : isError
        ? errorBlock(text, undefined, o)
        : textResultLines(content, false, o);
  },
  inPlace: (args) => {
    const cells = (args as { cells?: unknown } | undefined)?.cells;
    return Array.isArray(cells) && cells.length > 1;
  },
});
registerToolView(artifactDescriptor, { call: artifactCallLines, result: artifactResultLines });
registerToolView(runsDescriptor, { call: runsCallLines, result: runsResultLines });

function textOf(content: Content): string {
  return content
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
}

/** The call: which tool, and what it was asked (the python tool's code, highlighted). */
export function renderToolCall(tool: RenderedTool, args: unknown, o: RenderOptions): string[] {
  const view = viewOf(tool);
  const lines = view ? view.call(args, o) : genericCallLines(nameOf(tool), args, o);
  return fit(lines, o.width);
}

/**
 * The result, or a partial one (`partial`: an onUpdate while cells run). Tools without a view get
 * their text as it is.
 */
export function renderToolResult(
  tool: RenderedTool,
  result: RenderableResult,
  o: RenderOptions & { partial?: boolean },
): string[] {
  const content = result.content as Content;
  const isError = result.isError === true;
  const view = viewOf(tool);
  const lines = view
    ? view.result(content, result.details, isError, o)
    : textResultLines(content, isError, o);
  return fit(lines, o.width);
}
