/**
 * Colours for the terminal views (docs/render.md): a view asks for a role, the theme decides the
 * escape codes. plainTheme() draws no colour at all (NO_COLOR, TERM=dumb, files, snapshots).
 */

/** What a piece of text is; the theme maps each role to a colour. */
export type ThemeRole =
  | "accent"
  | "muted"
  | "dim"
  | "success"
  | "error"
  | "warning"
  | "toolTitle"
  | "border"
  | "code"
  | "keyword"
  | "string"
  | "number"
  | "comment"
  | "function"
  | "builtin"
  | "literal"
  | "type"
  | "meta"
  | "heading"
  | "emphasis"
  | "link"
  | "quote"
  | "jsonKey";

export interface RenderTheme {
  fg(role: ThemeRole, text: string): string;
  bold(text: string): string;
}

export const THEME_ROLES: ThemeRole[] = [
  "accent",
  "muted",
  "dim",
  "success",
  "error",
  "warning",
  "toolTitle",
  "border",
  "code",
  "keyword",
  "string",
  "number",
  "comment",
  "function",
  "builtin",
  "literal",
  "type",
  "meta",
  "heading",
  "emphasis",
  "link",
  "quote",
  "jsonKey",
];

/** 256-colour palette indices per role. */
const COLORS_256: Record<ThemeRole, number> = {
  accent: 75,
  muted: 246,
  dim: 241,
  success: 71,
  error: 167,
  warning: 179,
  toolTitle: 255,
  border: 239,
  code: 252,
  keyword: 176,
  string: 114,
  number: 173,
  comment: 243,
  function: 75,
  builtin: 80,
  literal: 173,
  type: 180,
  meta: 139,
  heading: 75,
  emphasis: 223,
  link: 74,
  quote: 246,
  jsonKey: 110,
};

/** The 16 basic colours (30–37, bright 90–97) for terminals without 256 colours. */
const COLORS_16: Record<ThemeRole, number> = {
  accent: 94,
  muted: 37,
  dim: 90,
  success: 32,
  error: 31,
  warning: 33,
  toolTitle: 97,
  border: 90,
  code: 37,
  keyword: 35,
  string: 32,
  number: 33,
  comment: 90,
  function: 34,
  builtin: 36,
  literal: 33,
  type: 33,
  meta: 35,
  heading: 94,
  emphasis: 93,
  link: 34,
  quote: 37,
  jsonKey: 36,
};

/** Wraps each line on its own, so a line cut or wrapped later still carries its colour and reset. */
function perLine(text: string, open: string, close: string): string {
  if (text === "") return text;
  return text
    .split("\n")
    .map((l) => (l === "" ? l : `${open}${l}${close}`))
    .join("\n");
}

export function ansiTheme(options: { colors?: 256 | 16 } = {}): RenderTheme {
  const depth = options.colors ?? 256;
  return {
    fg(role, text) {
      const open = depth === 256 ? `\x1b[38;5;${COLORS_256[role]}m` : `\x1b[${COLORS_16[role]}m`;
      return perLine(text, open, "\x1b[39m");
    },
    bold(text) {
      return perLine(text, "\x1b[1m", "\x1b[22m");
    },
  };
}

export function plainTheme(): RenderTheme {
  return { fg: (_role, text) => text, bold: (text) => text };
}

/** Whether a theme draws colour (views skip highlighting work when it does not). */
export function isPlain(theme: RenderTheme): boolean {
  return theme.fg("accent", "x") === "x";
}

/**
 * The theme the environment asks for: NO_COLOR (any non-empty value), FORCE_COLOR=0 or TERM=dumb →
 * plain; 256 colours when TERM or COLORTERM says so, else the 16 basic ones.
 */
export function themeFromEnv(env: Readonly<Record<string, string | undefined>>): RenderTheme {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return plainTheme();
  if (env.FORCE_COLOR === "0" || env.TERM === "dumb") return plainTheme();
  const rich =
    /256|truecolor|24bit/i.test(env.TERM ?? "") ||
    /truecolor|24bit/i.test(env.COLORTERM ?? "") ||
    env.FORCE_COLOR === "2" ||
    env.FORCE_COLOR === "3";
  return ansiTheme({ colors: rich ? 256 : 16 });
}
