/**
 * Markdown cells and text/markdown outputs: markdown-it (CommonMark, with GitHub tables and
 * strikethrough, raw HTML allowed as Jupyter allows it), then DOMPurify over the HTML it makes, then
 * KaTeX over the math. Math is cut out before markdown reads the text (a rule below), so `_` and `*`
 * inside $…$ stay TeX, and becomes an empty placeholder the sanitizer lets through; math.ts draws it.
 *
 * Safety (docs/view.md "Safety"): DOMPurify drops scripts, event handlers, `javascript:` and other
 * non-web URLs, forms, and `style` tags and attributes (the page's CSP would block them anyway);
 * links open in a new tab with no opener and no referrer.
 */
import DOMPurify from "dompurify";
import type { StateInline } from "markdown-it";
import MarkdownIt from "markdown-it";
import type { MimeBundle } from "../protocol.js";
import { escapeHtml, highlightHtml } from "./highlight.js";
import { renderMathIn } from "./math.js";

/** Delimiters of math, in the order they are tried at a position. */
const MATH: [open: string, close: string, display: boolean][] = [
  ["$$", "$$", true],
  ["\\[", "\\]", true],
  ["\\(", "\\)", false],
  ["$", "$", false],
];

function mathRule(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const at = state.pos;
  const c = src[at];
  if (c !== "$" && c !== "\\") return false;
  // \begin{env} … \end{env}, as Jupyter renders outside $$
  const env = c === "\\" ? /^\\begin\{([a-zA-Z*]+)\}/.exec(src.slice(at, at + 40)) : null;
  if (env) {
    const end = `\\end{${env[1]}}`;
    const stop = src.indexOf(end, at + env[0].length);
    if (stop < 0) return false;
    if (!silent) {
      const token = state.push("math", "", 0);
      token.content = src.slice(at, stop + end.length);
      token.meta = { display: true };
    }
    state.pos = stop + end.length;
    return true;
  }
  for (const [open, close, display] of MATH) {
    if (!src.startsWith(open, at)) continue;
    let from = at + open.length;
    // `$` must touch its text ($5 and $6 is money, not math)
    if (open === "$" && (src[from] === " " || src[from] === undefined)) return false;
    for (;;) {
      const stop = src.indexOf(close, from);
      if (stop < 0) return false;
      if (src[stop - 1] === "\\") {
        from = stop + 1;
        continue;
      }
      if (open === "$" && (stop === at + 1 || src[stop - 1] === " ")) return false;
      if (!silent) {
        const token = state.push("math", "", 0);
        token.content = src.slice(at + open.length, stop);
        token.meta = { display };
      }
      state.pos = stop + close.length;
      return true;
    }
  }
  return false;
}

const md = new MarkdownIt({
  html: true,
  linkify: true,
  highlight: (code, lang) => highlightHtml(code, lang || undefined),
});
md.inline.ruler.before("escape", "math", mathRule);
md.renderer.rules.math = (tokens, i) => {
  const t = tokens[i];
  const display = (t.meta as { display: boolean }).display;
  return `<span class="nb-math${display ? " nb-math-display" : ""}" data-tex="${escapeHtml(t.content)}"></span>`;
};
// `![](attachment:NAME)`: the image the cell carries, as a data: URL (before sanitizing, which keeps
// data: images and drops the unknown attachment: scheme)
md.validateLink = (url) => !/^\s*(javascript|vbscript|file):/i.test(url);
const defaultImage = md.renderer.rules.image!;
md.renderer.rules.image = (tokens, i, options, env, self) => {
  const src = String(tokens[i].attrGet("src") ?? "");
  const attachments = (env as { attachments?: Record<string, MimeBundle> }).attachments;
  if (src.startsWith("attachment:") && attachments) {
    const bundle = attachments[decodeURIComponent(src.slice("attachment:".length))];
    const mime = bundle && Object.keys(bundle).find((m) => m.startsWith("image/") && m !== "image/svg+xml");
    if (mime) tokens[i].attrSet("src", `data:${mime};base64,${String(bundle[mime]).replace(/\s/g, "")}`);
  }
  return defaultImage(tokens, i, options, env, self);
};

let hooked = false;
function purify(html: string): DocumentFragment {
  if (!hooked) {
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
    hooked = true;
  }
  return DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
    FORBID_ATTR: ["style"],
  });
}

/** The markdown as sanitized DOM, math drawn. */
export function renderMarkdown(
  doc: Document,
  text: string,
  attachments?: Record<string, MimeBundle>,
): DocumentFragment {
  const fragment = purify(md.render(text, { attachments }));
  const out = doc.importNode(fragment, true);
  renderMathIn(out);
  return out;
}

/** An SVG image made safe: sanitized as SVG (no scripts, handlers, foreignObject), as a data: URL for <img>. */
export function sanitizeSvg(svg: string): string {
  const clean = DOMPurify.sanitize(svg, {
    USE_PROFILES: { svg: true, svgFilters: true },
    FORBID_TAGS: ["foreignObject", "style"],
  });
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(clean)}`;
}
