/**
 * Syntax colours by a real highlighter: highlight.js grammars (Python, Markdown, JSON) through
 * lowlight, which hands back a tree of classed spans; each class maps to a theme role. Only these
 * three grammars are loaded. Returns one string per source line, colours closed on every line.
 */
import { isPlain, type RenderTheme, type ThemeRole } from "./theme.js";
import { createLowlight, json, markdown, python } from "./vendor.js";
import { cleanText } from "./width.js";

export type HighlightLanguage = "python" | "markdown" | "json" | "text";

const lowlight = createLowlight({ python, markdown, json });

/** highlight.js scope → role (the first class that maps wins). */
const SCOPES: Record<string, ThemeRole> = {
  keyword: "keyword",
  built_in: "builtin",
  type: "type",
  literal: "literal",
  number: "number",
  string: "string",
  subst: "code",
  regexp: "string",
  symbol: "literal",
  comment: "comment",
  doctag: "comment",
  meta: "meta",
  title: "function",
  "title.function": "function",
  "title.class": "type",
  params: "code",
  attr: "jsonKey",
  attribute: "jsonKey",
  variable: "code",
  section: "heading",
  bullet: "accent",
  emphasis: "emphasis",
  strong: "emphasis",
  quote: "quote",
  link: "link",
  code: "string",
  punctuation: "muted",
  operator: "code",
};

interface HastText {
  type: "text";
  value: string;
}
interface HastElement {
  type: "element";
  properties?: { className?: unknown };
  children: HastNode[];
}
type HastNode = HastText | HastElement | { type: string; children?: HastNode[] };

function roleOf(node: HastElement): ThemeRole | undefined {
  const classes = Array.isArray(node.properties?.className) ? (node.properties.className as string[]) : [];
  const names = classes.map((c) => c.replace(/^hljs-/, "")).filter((c) => !c.endsWith("_"));
  const joined = names.join(".");
  return SCOPES[joined] ?? names.map((n) => SCOPES[n]).find((r) => r !== undefined);
}

/** Source lines, coloured by `language` (plain lines when the theme has no colour). */
export function highlightLines(source: string, language: HighlightLanguage, theme: RenderTheme): string[] {
  const text = cleanText(source);
  if (language === "text" || isPlain(theme)) return text.split("\n");
  let tree: { children: HastNode[] };
  try {
    tree = lowlight.highlight(language, text) as unknown as { children: HastNode[] };
  } catch {
    return text.split("\n");
  }
  const lines: string[] = [""];
  const walk = (nodes: HastNode[], role: ThemeRole | undefined): void => {
    for (const node of nodes) {
      if (node.type === "text") {
        const parts = (node as HastText).value.split("\n");
        parts.forEach((part, k) => {
          if (k > 0) lines.push("");
          if (part) lines[lines.length - 1] += role ? theme.fg(role, part) : part;
        });
      } else if (node.type === "element") {
        const el = node as HastElement;
        walk(el.children, roleOf(el) ?? role);
      } else if ("children" in node && node.children) {
        walk(node.children, role);
      }
    }
  };
  walk(tree.children, undefined);
  return lines;
}

/** The language a notebook cell's source is highlighted as. */
export function cellLanguage(cellType: string | undefined): HighlightLanguage {
  if (cellType === "markdown") return "markdown";
  if (cellType === "raw") return "text";
  return "python";
}
