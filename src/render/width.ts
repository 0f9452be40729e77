/**
 * Width on screen: ANSI-aware and wide-character aware (string-width), with terminal image
 * sequences (kitty APC, sixel DCS, iTerm2 OSC) counted as nothing. Wrapping and cutting keep the
 * colour codes intact (wrap-ansi, slice-ansi). Text from kernels is cleaned before it is drawn.
 */
import { stripVTControlCharacters } from "node:util";
import { sliceAnsi, stringWidth, wrapAnsi } from "./vendor.js";

/** kitty graphics (APC) and sixel (DCS) sequences: ESC _ … ESC \ and ESC P … ESC \. */
const IMAGE_SEQUENCES = /\x1b[_P][\s\S]*?\x1b\\/g;

/** Columns a string takes in the terminal. */
export function visibleWidth(text: string): number {
  if (text.includes("\x1b_") || text.includes("\x1bP")) text = text.replace(IMAGE_SEQUENCES, "");
  return stringWidth(text);
}

/** Cuts a line to `width` columns, ending with `…` when something was cut. */
export function truncateToWidth(line: string, width: number, ellipsis = "…"): string {
  if (width <= 0) return "";
  if (visibleWidth(line) <= width) return line;
  const room = Math.max(0, width - visibleWidth(ellipsis));
  let end = room;
  let cut = sliceAnsi(line, 0, end);
  // a wide character at the edge may still overflow by one column: end before it
  while (end > 0 && visibleWidth(cut) > room) cut = sliceAnsi(line, 0, --end);
  if (visibleWidth(cut) > room) cut = "";
  return `${cut}${ellipsis}`;
}

/**
 * Wraps one line to `width` columns (hard: long words break), colours kept. Prose (`trim`, the
 * default) loses the spaces at the breaks; content (output, code) keeps every character.
 */
export function wrapLine(line: string, width: number, trim = true): string[] {
  if (width <= 0) return [""];
  if (visibleWidth(line) <= width) return [line];
  const out = wrapAnsi(line, width, { hard: true, trim, wordWrap: true }).split("\n");
  // wrap-ansi may leave a line a column wide with wide characters at the edge: cut those
  return out.map((l) => (visibleWidth(l) > width ? truncateToWidth(l, width) : l));
}

/** Wraps every line of a block of content to `width`, keeping every character. */
export function wrapLines(lines: string[], width: number): string[] {
  return lines.flatMap((l) => wrapLine(l, width, false));
}

/**
 * Text from a kernel or a file, made safe to draw: no escape sequences or control characters
 * (a carriage return keeps what was written last, as a terminal shows it), tabs as spaces.
 */
export function cleanText(text: string): string {
  let t = stripVTControlCharacters(text.replace(IMAGE_SEQUENCES, ""));
  if (t.includes("\r")) {
    t = t
      .replace(/\r\n/g, "\n")
      .split("\n")
      .map((l) => {
        const parts = l.split("\r").filter((p) => p !== "");
        return parts.length ? parts[parts.length - 1] : "";
      })
      .join("\n");
  }
  if (t.includes("\t")) t = t.split("\n").map(expandTabs).join("\n");
  // other C0/C1 controls (bell, backspace, …) draw nothing useful
  return t.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, "");
}

function expandTabs(line: string): string {
  let out = "";
  for (const ch of line) {
    if (ch === "\t") out += " ".repeat(4 - (stringWidth(out) % 4));
    else out += ch;
  }
  return out;
}

/** Pads a line with spaces to `width` columns (for right-aligned parts). */
export function padTo(line: string, width: number): string {
  const w = visibleWidth(line);
  return w >= width ? line : line + " ".repeat(width - w);
}
