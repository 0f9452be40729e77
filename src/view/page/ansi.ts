/**
 * ANSI SGR escapes (colours, bold, italic, underline, inverse) of streams and tracebacks, turned into
 * DOM nodes: text nodes in spans whose style is set through the CSSOM, never parsed from a `style`
 * attribute, so the page's Content-Security-Policy (style-src 'self') needs no 'unsafe-inline'.
 * The 16 basic colours are classes (page.css, JupyterLab's palette); 256-colour and 24-bit ones are
 * computed. Other escapes (cursor movement, titles) are dropped.
 */

interface Sgr {
  fg?: string;
  bg?: string;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  inverse?: boolean;
}

const NAMES = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"];

/** Colour n of the 256-colour palette as CSS. Basic ones (0–15) as class names: `ansi-red`. */
function color256(n: number): string {
  if (n < 8) return `class:${NAMES[n]}`;
  if (n < 16) return `class:bright-${NAMES[n - 8]}`;
  if (n < 232) {
    const v = n - 16;
    const level = (x: number) => (x === 0 ? 0 : 55 + x * 40);
    return `rgb(${level(Math.floor(v / 36))}, ${level(Math.floor(v / 6) % 6)}, ${level(v % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g}, ${g}, ${g})`;
}

/** Reads an extended colour (38;5;n or 38;2;r;g;b) starting at codes[i]; returns it and the codes used. */
function extended(codes: number[], i: number): [string | undefined, number] {
  if (codes[i + 1] === 5 && codes[i + 2] !== undefined) return [color256(codes[i + 2]), 2];
  if (codes[i + 1] === 2 && codes[i + 4] !== undefined) {
    const [r, g, b] = codes.slice(i + 2, i + 5).map((x) => Math.max(0, Math.min(255, x)));
    return [`rgb(${r}, ${g}, ${b})`, 4];
  }
  return [undefined, 0];
}

function applyCodes(state: Sgr, codes: number[]): Sgr {
  const s: Sgr = { ...state };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) for (const k of Object.keys(s) as (keyof Sgr)[]) delete s[k];
    else if (c === 1) s.bold = true;
    else if (c === 2) s.dim = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 7) s.inverse = true;
    else if (c === 22) s.bold = s.dim = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c === 27) s.inverse = false;
    else if (c >= 30 && c <= 37) s.fg = `class:${NAMES[c - 30]}`;
    else if (c >= 90 && c <= 97) s.fg = `class:bright-${NAMES[c - 90]}`;
    else if (c === 39) s.fg = undefined;
    else if (c >= 40 && c <= 47) s.bg = `class:${NAMES[c - 40]}`;
    else if (c >= 100 && c <= 107) s.bg = `class:bright-${NAMES[c - 100]}`;
    else if (c === 49) s.bg = undefined;
    else if (c === 38 || c === 48) {
      const [color, used] = extended(codes, i);
      if (c === 38) s.fg = color;
      else s.bg = color;
      i += used;
    }
  }
  return s;
}

function styled(doc: Document, text: string, s: Sgr): Node {
  const plain = !s.fg && !s.bg && !s.bold && !s.dim && !s.italic && !s.underline && !s.inverse;
  if (plain) return doc.createTextNode(text);
  const span = doc.createElement("span");
  span.textContent = text;
  const [fg, bg] = s.inverse
    ? [s.bg ?? "class:default-inverse-fg", s.fg ?? "class:default-inverse-bg"]
    : [s.fg, s.bg];
  for (const [color, side] of [
    [fg, "fg"],
    [bg, "bg"],
  ] as const) {
    if (!color) continue;
    if (color.startsWith("class:")) span.classList.add(`ansi-${color.slice(6)}-${side}`);
    else if (side === "fg") span.style.color = color;
    else span.style.backgroundColor = color;
  }
  if (s.bold) span.classList.add("ansi-bold");
  if (s.dim) span.classList.add("ansi-dim");
  if (s.italic) span.classList.add("ansi-italic");
  if (s.underline) span.classList.add("ansi-underline");
  return span;
}

// CSI sequences (ESC [ … final byte) and OSC sequences (ESC ] … BEL or ESC \)
const ESCAPE = /\x1b\[([0-9;?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?/g;

/** The text with its ANSI colours as a fragment of text nodes and styled spans. */
export function ansiToFragment(doc: Document, text: string): DocumentFragment {
  const out = doc.createDocumentFragment();
  let state: Sgr = {};
  let at = 0;
  for (const m of text.matchAll(ESCAPE)) {
    if (m.index > at) out.append(styled(doc, text.slice(at, m.index), state));
    at = m.index + m[0].length;
    if (m[2] === "m") {
      const codes = (m[1] || "0")
        .split(";")
        .map((x) => (x === "" ? 0 : Number.parseInt(x, 10)))
        .filter((x) => Number.isFinite(x));
      state = applyCodes(state, codes);
    }
  }
  if (at < text.length) out.append(styled(doc, text.slice(at), state));
  return out;
}
