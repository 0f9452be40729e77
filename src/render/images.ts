/**
 * Images in the terminal: drawn inline with the kitty graphics protocol (PNG), iTerm2's inline
 * images (PNG, JPEG) or sixel (PNG, sixel.ts) when the terminal supports them, else a
 * `[image 640×480 PNG]` placeholder.
 * The drawn image takes `rows` lines: rows-1 empty lines are reserved, then the last line moves the
 * cursor up and draws, so a line-based screen keeps its count of lines right.
 */
import type { ImageProtocol, RenderOptions } from "./format.js";
import { pngToSixel } from "./sixel.js";

export type { ImageProtocol } from "./format.js";

/**
 * The protocol the terminal supports, from its environment: NBAGENT_IMAGES overrides
 * (kitty|iterm2|sixel|none); inside tmux/screen nothing is drawn (they do not pass images through).
 */
export function detectImageProtocol(env: Readonly<Record<string, string | undefined>>): ImageProtocol {
  const forced = env.NBAGENT_IMAGES;
  if (forced === "kitty" || forced === "iterm2" || forced === "sixel" || forced === "none") return forced;
  const term = env.TERM ?? "";
  const program = env.TERM_PROGRAM ?? "";
  if (env.TMUX || term.startsWith("screen") || term.startsWith("tmux")) return "none";
  if (env.KITTY_WINDOW_ID || term === "xterm-kitty" || program === "ghostty" || term === "xterm-ghostty")
    return "kitty";
  if (program === "iTerm.app" || env.LC_TERMINAL === "iTerm2" || program === "WezTerm") return "iterm2";
  if (env.KONSOLE_VERSION) return "kitty";
  if (term === "foot" || term === "foot-extra" || term.includes("mlterm") || program === "contour")
    return "sixel";
  return "none";
}

export interface DrawableImage {
  /** Base64 of the encoded image, when the model was sent one. */
  data?: string;
  mimeType: string;
  width?: number;
  height?: number;
}

function kind(mimeType: string): string {
  const sub = mimeType.split("/")[1] ?? mimeType;
  return (sub === "svg+xml" ? "SVG" : sub).toUpperCase();
}

/** `[image 640×480 PNG]` (size left out when unknown). */
export function imagePlaceholder(img: DrawableImage, note?: string): string {
  const size = img.width && img.height ? ` ${img.width}×${img.height}` : "";
  return `[image${size} ${kind(img.mimeType)}${note ? `; ${note}` : ""}]`;
}

/** Columns × rows the image takes, aspect kept (a cell about twice as tall as wide). */
export function imageCells(img: DrawableImage, maxCols: number): { cols: number; rows: number } {
  const w = img.width ?? 640;
  const h = img.height ?? 480;
  let cols = Math.max(1, Math.min(maxCols, 80, Math.ceil(w / 9)));
  let rows = Math.max(1, Math.round((cols * h) / w / 2));
  if (rows > 24) {
    rows = 24;
    cols = Math.max(1, Math.min(cols, Math.round((rows * 2 * w) / h)));
  }
  return { cols, rows };
}

function kittySequence(data: string, cols: number, rows: number): string {
  const chunks: string[] = [];
  for (let i = 0; i < data.length; i += 4096) chunks.push(data.slice(i, i + 4096));
  return chunks
    .map((chunk, k) => {
      const more = k < chunks.length - 1 ? 1 : 0;
      const head = k === 0 ? `a=T,f=100,q=2,c=${cols},r=${rows},m=${more}` : `m=${more}`;
      return `\x1b_G${head};${chunk}\x1b\\`;
    })
    .join("");
}

function itermSequence(data: string, cols: number, rows: number): string {
  const bytes = Math.floor((data.length * 3) / 4);
  return `\x1b]1337;File=inline=1;size=${bytes};width=${cols};height=${rows};preserveAspectRatio=1:${data}\x07`;
}

/** The lines that draw one image (or its placeholder), for a space `maxCols` wide. */
export function imageLines(img: DrawableImage, o: RenderOptions, maxCols: number): string[] {
  const protocol = o.images ?? "none";
  const placeholder = (note?: string) => [o.theme.fg("accent", imagePlaceholder(img, note))];
  if (protocol === "none" || !img.data) return placeholder();
  // kitty and sixel take PNG here (JPEG would need decoding first); iTerm2 any format
  if (protocol !== "iterm2" && img.mimeType !== "image/png") return placeholder();
  const { cols, rows } = imageCells(img, maxCols);
  const seq =
    protocol === "kitty"
      ? kittySequence(img.data, cols, rows)
      : protocol === "iterm2"
        ? itermSequence(img.data, cols, rows)
        : pngToSixel(img.data, cols, rows);
  if (seq === undefined) return placeholder("cannot be decoded");
  const up = rows > 1 ? `\x1b[${rows - 1}A` : "";
  return [...Array.from({ length: rows - 1 }, () => ""), up + seq];
}
