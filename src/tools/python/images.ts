/**
 * Images for the model (docs/output.md): PNG/JPEG (and SVG rasterised to PNG) downscaled with sharp to a pixel
 * and byte budget. An image that cannot be brought within budget is reported, never dropped silently.
 */
import { createRequire } from "node:module";
import type { Sharp, SharpOptions } from "sharp";
import { DEFAULT_IMAGE_BUDGET, type ImageBudget } from "../../output/model-budgets.js";
import { inUnit } from "../../sys/units.js";

type SharpFactory = (input?: Buffer, options?: SharpOptions) => Sharp;
let sharpModule: Promise<SharpFactory> | undefined;
/** sharp (libvips) is loaded on the first image only: ~35 MB of RSS a text-only host never pays. */
function loadSharp(): Promise<SharpFactory> {
  // Required (its CommonJS build), not import()ed: the CLI's bundle is a script, which has no dynamic
  // import (src/cli/code-cache.ts).
  sharpModule ??= Promise.resolve().then(
    () => createRequire(import.meta.url)("sharp") as unknown as SharpFactory,
  );
  return sharpModule;
}

/** What a result's details say of one image it named: its sizes, and whether it was sent or why not. */
export interface ImageDetails {
  mimeType: string;
  width?: number;
  height?: number;
  included: boolean;
  sentMimeType?: string;
  sentWidth?: number;
  sentHeight?: number;
  bytes?: number;
  reason?: string;
}

export interface PreparedImage {
  /** Base64 of the encoded image, when it fits the budget. */
  data?: string;
  mimeType?: string;
  /** Source size. */
  width?: number;
  height?: number;
  /** Size sent. */
  sentWidth?: number;
  sentHeight?: number;
  originalBytes: number;
  bytes?: number;
  resized: boolean;
  /** Why it was not included. */
  error?: string;
}

function sourceBytes(mimeType: string, payload: unknown): Buffer {
  if (typeof payload !== "string") {
    if (Array.isArray(payload)) return sourceBytes(mimeType, payload.join(""));
    throw new Error("no image data");
  }
  return mimeType === "image/svg+xml"
    ? Buffer.from(payload, "utf8")
    : Buffer.from(payload.replace(/\s+/g, ""), "base64");
}

/** Fits one image into the budget. Never throws: failures come back as `error`. */
export async function prepareImage(
  mimeType: string,
  payload: unknown,
  budget: ImageBudget = {},
): Promise<PreparedImage> {
  const b = { ...DEFAULT_IMAGE_BUDGET, ...budget };
  let input: Buffer;
  try {
    input = sourceBytes(mimeType, payload);
  } catch (err) {
    return { originalBytes: 0, resized: false, error: (err as Error).message };
  }
  const out: PreparedImage = { originalBytes: input.length, resized: false };
  try {
    const sharp = await loadSharp();
    const meta = await sharp(input).metadata();
    out.width = meta.width;
    out.height = meta.height;
    const w = meta.width ?? 0;
    const h = meta.height ?? 0;
    if (!w || !h) throw new Error("unreadable image");
    const passThrough = (mimeType === "image/png" || mimeType === "image/jpeg") && meta.format !== undefined;
    let scale = Math.min(1, b.maxDimension / Math.max(w, h), Math.sqrt(b.maxPixels / (w * h)));
    if (passThrough && scale === 1 && input.length <= b.maxBytes) {
      return {
        ...out,
        data: input.toString("base64"),
        mimeType,
        sentWidth: w,
        sentHeight: h,
        bytes: input.length,
      };
    }
    for (let attempt = 0; attempt < 6; attempt++) {
      const tw = Math.max(1, Math.round(w * scale));
      const th = Math.max(1, Math.round(h * scale));
      const base = () => sharp(input).resize(tw, th, { fit: "fill" });
      const candidates: [string, () => Promise<Buffer>][] =
        mimeType === "image/jpeg"
          ? [["image/jpeg", () => base().jpeg({ quality: 85 }).toBuffer()]]
          : [
              ["image/png", () => base().png({ compressionLevel: 9 }).toBuffer()],
              [
                "image/jpeg",
                () => base().flatten({ background: "#ffffff" }).jpeg({ quality: 80 }).toBuffer(),
              ],
            ];
      for (const [mime, encode] of candidates) {
        const buf = await encode();
        if (buf.length <= b.maxBytes) {
          return {
            ...out,
            data: buf.toString("base64"),
            mimeType: mime,
            sentWidth: tw,
            sentHeight: th,
            bytes: buf.length,
            resized: tw !== w || th !== h || mime !== mimeType,
          };
        }
      }
      scale *= 0.7;
    }
    return { ...out, error: `still larger than ${inUnit(b.maxBytes, "KB")} after downscaling` };
  } catch (err) {
    return { ...out, error: (err as Error).message };
  }
}
