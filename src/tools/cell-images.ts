/**
 * The images of one call for the model (docs/output.md): at most `maxImages`, the latest ones (what
 * a live-updating cell shows last), in the order they came; earlier ones are counted, not kept, so
 * memory stays bounded. A cell's clear_output removes its images, as it does in the notebook.
 *
 * Each image leaves a placeholder at its place in the cell's text (`[image #3 · cell 2]`: the call's
 * third image; the artifact keeps it so). When the text is built, `label` turns each into what the
 * model reads: `[image 1 · cell 2 · 640×480]`, tied to the image contents by their order.
 */
import type { ImageBudget } from "../output/model-budgets.js";
import { imageLabel } from "./image-label.js";
import { prepareImage } from "./python/images.js";
import type { PythonToolDetails } from "./python/result.js";
import type { ImageContent } from "./types.js";

interface KeptImage {
  /** Position (1-based) of the cell in the call. */
  cell: number;
  /** The call's image number (1-based, every image counted): what its placeholder names. */
  seq: number;
  /** How the text names the cell. */
  name: number;
  mimeType: string;
  payload: unknown;
  /** The display id it was shown under, if any (update_display_data replaces it). */
  displayId?: string;
}

/**
 * A placeholder in the text; the cell is named as the text names cells. (`\u00b7` is the middle dot:
 * the built CLI must stay ASCII, scripts/bundle.mjs.)
 */
const PLACEHOLDER = /\[image #(\d+) \u00b7 cell (-?\d+)\]/g;

function placeholder(seq: number, name: number): string {
  return `[image #${seq} · cell ${name}]`;
}

export class LatestImages {
  private kept: KeptImage[] = [];
  /** Images left out by the limit, per cell (a clear forgets them with the cell's other output). */
  private readonly dropped = new Map<number, number>();
  /** Images seen so far (placeholders up to this number were handed out). */
  private seq = 0;
  /** Labels of the kept images once prepared, by their number; `sent`: it is an image content. */
  private readonly labels = new Map<number, { text: string; cell: number; sent: boolean }>();

  /** `leftOut`: what a label of an image over the limit adds (where it is kept, the call that returns it). */
  constructor(
    private readonly maxImages: number,
    private readonly leftOut: (cell: number) => string = () => "",
  ) {}

  /**
   * Records an image of cell `cell` (position), named `name` in the text; returns the placeholder
   * to put at its place in the cell's text.
   */
  add(cell: number, name: number, mimeType: string, payload: unknown, displayId?: string): string {
    const seq = ++this.seq;
    this.kept.push({ cell, seq, name, mimeType, payload, displayId });
    while (this.kept.length > this.maxImages) {
      const old = this.kept.shift()!;
      this.dropped.set(old.cell, (this.dropped.get(old.cell) ?? 0) + 1);
    }
    return placeholder(seq, name);
  }

  /**
   * A display with this id was updated (update_display_data, or shown again) to an image: the first
   * kept image it showed becomes the new one in place (same position, same placeholder, returned);
   * its other kept images leave. Undefined when none was kept.
   */
  replace(displayId: string, mimeType: string, payload: unknown): string | undefined {
    const first = this.kept.find((k) => k.displayId === displayId);
    if (!first) return undefined;
    this.kept = this.kept.filter((k) => k === first || k.displayId !== displayId);
    first.mimeType = mimeType;
    first.payload = payload;
    return placeholder(first.seq, first.name);
  }

  /** The images a display with this id showed leave (it shows no image now, or it was cleared). */
  forget(displayId: string): void {
    this.kept = this.kept.filter((k) => k.displayId !== displayId);
  }

  clear(cell: number): void {
    this.kept = this.kept.filter((k) => k.cell !== cell);
    this.dropped.delete(cell);
  }

  get droppedCount(): number {
    let n = 0;
    for (const v of this.dropped.values()) n += v;
    return n;
  }

  /**
   * `text` with each image's placeholder replaced by its label: its place among the image contents
   * and its size as sent once prepared, why it is left out, or (while the call goes on) only its cell.
   */
  label(text: string): string {
    if (this.seq === 0 || !text.includes("[image #")) return text;
    return text.replace(PLACEHOLDER, (whole, n: string, cell: string) => {
      const seq = Number(n);
      if (seq < 1 || seq > this.seq) return whole;
      const done = this.labels.get(seq);
      if (done) return done.text;
      if (this.kept.some((k) => k.seq === seq)) return imageLabel({ cell });
      const more = this.leftOut(Number(cell));
      return imageLabel({
        cell,
        leftOut: `over the ${this.maxImages}-image limit${more ? `; ${more}` : ""}`,
      });
    });
  }

  /**
   * Lines for the prepared images whose label `text` does not show (their place was in output left
   * out of the view), so every image content is tied to its cell and every image left out is named.
   */
  unplaced(text: string): string[] {
    const lines: string[] = [];
    for (const { seq } of this.kept) {
      const label = this.labels.get(seq);
      if (!label || text.includes(label.text)) continue;
      lines.push(`${label.text} (its place is in the part of cell ${label.cell}'s output not shown here)`);
    }
    return lines;
  }

  /** Fits the kept images to the budget; records each in details (and the dropped count). */
  async prepare(budget: Required<ImageBudget>, details: PythonToolDetails): Promise<ImageContent[]> {
    const content: ImageContent[] = [];
    const dropped = this.droppedCount;
    if (dropped) details.droppedImages = dropped;
    for (const { cell, seq, mimeType, payload } of this.kept) {
      const img = await prepareImage(mimeType, payload, budget);
      details.images.push({
        cell,
        mimeType,
        width: img.width,
        height: img.height,
        originalBytes: img.originalBytes,
        included: img.data !== undefined,
        sentMimeType: img.mimeType,
        sentWidth: img.sentWidth,
        sentHeight: img.sentHeight,
        bytes: img.bytes,
        reason: img.error,
      });
      const name = details.cells[cell - 1]?.index ?? cell;
      if (img.data && img.mimeType) {
        content.push({ type: "image", data: img.data, mimeType: img.mimeType });
        const text = imageLabel({
          cell: name,
          index: content.length,
          width: img.sentWidth ?? img.width ?? 0,
          height: img.sentHeight ?? img.height ?? 0,
        });
        this.labels.set(seq, { text, cell: name, sent: true });
      } else {
        const text = imageLabel({ cell: name, leftOut: img.error ?? "it could not be read" });
        this.labels.set(seq, { text, cell: name, sent: false });
      }
    }
    return content;
  }
}

/** A markdown image or a bare data URI carrying a base64 image (from HTML converted to markdown). */
const DATA_IMAGE =
  /!\[[^\]\n]*\]\(\s*data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=\s]*?)\s*\)|data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=]+)/g;

/**
 * `text` with each base64 image it carries (`![](data:image/png;base64,…)`, as HTML's `<img>`
 * becomes) replaced by what `add` returns for it (a placeholder); the images go to `add` in order.
 */
export function replaceDataImages(text: string, add: (mimeType: string, payload: string) => string): string {
  if (!text.includes("data:image/")) return text;
  return text.replace(DATA_IMAGE, (_whole, m1?: string, b1?: string, m2?: string, b2?: string) => {
    const mimeType = (m1 ?? m2 ?? "image/png").toLowerCase();
    const base64 = (b1 ?? b2 ?? "").replace(/\s+/g, "");
    // an SVG image is read from its source text
    const payload = mimeType === "image/svg+xml" ? Buffer.from(base64, "base64").toString("utf8") : base64;
    return add(mimeType, payload);
  });
}
