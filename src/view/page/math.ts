/**
 * TeX through KaTeX, drawn with DOM calls (katex.render), not as an HTML string: KaTeX sets its
 * sizes through the CSSOM then, which the page's CSP allows, where parsed `style` attributes would
 * be blocked. Unknown commands show as KaTeX's red error text, never throw; `trust` stays off, so
 * \href, \url and \html… commands make no links or attributes.
 */
import katex from "katex";

export function renderTex(target: HTMLElement, tex: string, display: boolean): void {
  try {
    katex.render(tex, target, { displayMode: display, throwOnError: false, trust: false, strict: "ignore" });
  } catch (e) {
    target.textContent = tex;
    target.title = String(e);
  }
}

/** Draws every math placeholder (`.nb-math[data-tex]`) under root, as markdown.ts leaves them. */
export function renderMathIn(root: ParentNode): void {
  for (const el of root.querySelectorAll<HTMLElement>(".nb-math[data-tex]")) {
    renderTex(el, el.dataset.tex ?? "", el.classList.contains("nb-math-display"));
    el.removeAttribute("data-tex");
  }
}

/** A text/latex output: `$…$`, `$$…$$`, `\[…\]` wrappers taken off; an environment is kept for KaTeX. */
export function latexBody(text: string): { tex: string; display: boolean } {
  const t = text.trim();
  for (const [open, close, display] of [
    ["$$", "$$", true],
    ["\\[", "\\]", true],
    ["$", "$", false],
    ["\\(", "\\)", false],
  ] as const) {
    if (t.length > open.length + close.length && t.startsWith(open) && t.endsWith(close))
      return { tex: t.slice(open.length, t.length - close.length), display };
  }
  return { tex: t, display: true };
}
