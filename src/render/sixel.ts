/**
 * Sixel drawing of a PNG, synchronously (the views are pure and synchronous): pngjs decodes, a
 * nearest-pixel scale fits it to the cells reserved for it (8×16 pixels per cell, the smallest common
 * cell, so the picture never runs past its rows), the sixel package quantises and encodes. The last
 * few encodings are kept: a host redraws the same image often.
 */
import { image2sixel } from "sixel";
import { PNG } from "./vendor.js";

const CELL_W = 8;
const CELL_H = 16;
const kept = new Map<string, string>();

function scale(src: Uint8Array, w: number, h: number, tw: number, th: number): Uint8Array {
  if (tw >= w && th >= h) return src;
  const out = new Uint8Array(tw * th * 4);
  for (let y = 0; y < th; y++) {
    const sy = Math.min(h - 1, Math.floor(((y + 0.5) * h) / th));
    for (let x = 0; x < tw; x++) {
      const sx = Math.min(w - 1, Math.floor(((x + 0.5) * w) / tw));
      const s = (sy * w + sx) * 4;
      out.set(src.subarray(s, s + 4), (y * tw + x) * 4);
    }
  }
  return out;
}

/** The sixel sequence of a base64 PNG in `cols`×`rows` cells, or undefined when it cannot be decoded. */
export function pngToSixel(base64: string, cols: number, rows: number): string | undefined {
  const key = `${cols}x${rows}:${base64.length}:${base64.slice(0, 64)}:${base64.slice(-64)}`;
  const hit = kept.get(key);
  if (hit !== undefined) return hit;
  let png: PNG;
  try {
    png = PNG.sync.read(Buffer.from(base64, "base64"));
  } catch {
    return undefined;
  }
  const ratio = Math.min(1, (cols * CELL_W) / png.width, (rows * CELL_H) / png.height);
  const tw = Math.max(1, Math.floor(png.width * ratio));
  const th = Math.max(1, Math.floor(png.height * ratio));
  const pixels = scale(png.data, png.width, png.height, tw, th);
  // one line of text: the encoder breaks its output into lines, which the terminal does not need
  const seq = image2sixel(pixels, tw, th, 256, 1).replace(/\n/g, "");
  kept.set(key, seq);
  if (kept.size > 8) kept.delete(kept.keys().next().value as string);
  return seq;
}
