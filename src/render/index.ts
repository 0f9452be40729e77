/**
 * Terminal views of nbagent's tools (docs/render.md): pure functions from a call's arguments or a
 * result to lines no wider than `width`, collapsed or expanded, in a theme's colours. Used by the
 * CLI and the pi extension.
 */
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

/** The call: which tool, and what it was asked (the python tool's code, highlighted). */
export function renderToolCall(toolName: string, args: unknown, o: RenderOptions): string[] {
  const lines =
    toolName === "notebook"
      ? notebookCallLines(args, o)
      : toolName === "python"
        ? pythonCallLines(args, o)
        : toolName === "artifact"
          ? artifactCallLines(args, o)
          : toolName === "runs"
            ? runsCallLines(args, o)
            : genericCallLines(toolName, args, o);
  return fit(lines, o.width);
}

/**
 * The result, or a partial one (`partial`: an onUpdate while cells run). Unknown tools get their
 * text as it is.
 */
export function renderToolResult(
  toolName: string,
  result: RenderableResult,
  o: RenderOptions & { partial?: boolean },
): string[] {
  const content = result.content as ReadonlyArray<{
    type: string;
    text?: string;
    data?: string;
    mimeType?: string;
  }>;
  const isError = result.isError === true;
  const text = content
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
  let lines: string[];
  switch (toolName) {
    case "notebook":
      lines = notebookResultLines(content, result.details, isError, o);
      break;
    case "python":
      lines =
        isPythonDetails(result.details) &&
        !(isError && isErrorText(text) && !result.details.cells.some((c) => c.status !== "pending"))
          ? pythonResultLines(text, result.details, content, o)
          : isError
            ? errorBlock(text, undefined, o)
            : textResultLines(content, false, o);
      break;
    case "artifact":
      lines = artifactResultLines(content, result.details, isError, o);
      break;
    case "runs":
      lines = runsResultLines(content, result.details, isError, o);
      break;
    default:
      lines = textResultLines(content, isError, o);
  }
  return fit(lines, o.width);
}
