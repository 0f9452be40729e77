/**
 * pi's theme as the views' RenderTheme (docs/pi.md): each role of src/render drawn in the colour pi's
 * own views use for the same kind of text (syntax roles as pi highlights code, markdown roles as pi
 * draws markdown), so nbagent's rows look like pi's. NO_COLOR (or TERM=dumb) draws no colour.
 */
import type { Theme, ThemeColor } from "@mariozechner/pi-coding-agent";
import { isPlain, plainTheme, type RenderTheme, type ThemeRole, themeFromEnv } from "../render/index.js";

/** Every role, so a role added to src/render fails the type check here until it has a colour. */
export const PI_COLORS: Record<ThemeRole, ThemeColor> = {
  accent: "accent",
  muted: "muted",
  dim: "dim",
  success: "success",
  error: "error",
  warning: "warning",
  toolTitle: "toolTitle",
  border: "borderMuted",
  code: "toolOutput",
  keyword: "syntaxKeyword",
  string: "syntaxString",
  number: "syntaxNumber",
  comment: "syntaxComment",
  function: "syntaxFunction",
  builtin: "syntaxType",
  literal: "syntaxNumber",
  type: "syntaxType",
  meta: "syntaxOperator",
  heading: "mdHeading",
  emphasis: "mdLink",
  link: "mdLinkUrl",
  quote: "mdQuote",
  jsonKey: "syntaxVariable",
};

/** pi's fg/bold wrap the whole text; the views want each line closed on its own (they cut lines). */
function perLine(text: string, paint: (line: string) => string): string {
  return text.includes("\n")
    ? text
        .split("\n")
        .map((l) => (l === "" ? l : paint(l)))
        .join("\n")
    : text === ""
      ? text
      : paint(text);
}

export function piRenderTheme(theme: Theme, env: NodeJS.ProcessEnv = process.env): RenderTheme {
  if (isPlain(themeFromEnv(env))) return plainTheme();
  return {
    fg: (role, text) => perLine(text, (l) => theme.fg(PI_COLORS[role] ?? "text", l)),
    bold: (text) => perLine(text, (l) => theme.bold(l)),
  };
}
