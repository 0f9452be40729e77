/**
 * The model's text for one rich output (a MIME bundle), the same for a `python` call, a notebook
 * `run` and a `read` of saved outputs (docs/output.md, "Rich outputs"): where it has an image, the
 * image's placeholder (instead of a text/plain that is only an object's repr); its text form by the
 * display precedence (HTML as markdown tables, a Styler's marks kept), with the base64 images it
 * carries handed to `embedded` and a placeholder at their place; then a line per output it cannot see.
 */
import { displayTextMime, displayTextSource, IMAGE_MIMES, unseenOutputs } from "../kernel/display.js";
import { bytesWholeKB } from "../sys/units.js";
import { replaceDataImages } from "./cell-images.js";

export interface BundleImageHooks {
  /** The bundle's own image: the placeholder that stands at its place (before its text). */
  image?: string;
  /** Takes a base64 image its HTML or markdown carries; returns what stands at its place. */
  embedded?: (mimeType: string, payload: string) => string;
}

/** A text/plain that is only an object's repr (`<Figure size 640x480 with 1 Axes>`): its image says more. */
const OBJECT_REPR = /^<[^<>\n]+>$/;

export function isObjectRepr(text: string): boolean {
  return OBJECT_REPR.test(text.trim());
}

/** The image type a bundle is sent as (PNG, JPEG, SVG in that order; undefined: none). */
export function bundleImage(data: Record<string, unknown>): string | undefined {
  return IMAGE_MIMES.find((m) => typeof data[m] === "string" || Array.isArray(data[m]));
}

/**
 * The text of a bundle for the model. `text`: its text form when already converted (a live
 * display's), else it is converted here.
 */
export function bundleModelText(
  data: Record<string, unknown>,
  hooks: BundleImageHooks = {},
  converted?: string,
): string {
  const mimeType = displayTextMime(data);
  const lines = hooks.image ? [hooks.image] : [];
  let text = (converted ?? displayTextSource(data).text).replace(/\n$/, "");
  if (hooks.image && mimeType === "text/plain" && isObjectRepr(text)) text = "";
  // markdown (as written, or from HTML) often starts with blank lines that say nothing
  if (mimeType === "text/markdown" || mimeType === "text/html") text = text.replace(/^\s*\n/, "");
  if (hooks.embedded && (mimeType === "text/html" || mimeType === "text/markdown"))
    text = replaceDataImages(text, hooks.embedded);
  if (text) lines.push(text);
  for (const u of unseenOutputs(data, mimeType))
    lines.push(`[${u.mimeType}, ${bytesWholeKB(u.bytes)}, not shown]`);
  return lines.join("\n");
}
