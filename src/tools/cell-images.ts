/**
 * The images of one call for the model (docs/output.md): at most `maxImages`, the latest ones (what
 * a live-updating cell shows last), in the order they came; earlier ones are counted, not kept, so
 * memory stays bounded. A cell's clear_output removes its images, as it does in the notebook.
 */
import type { DisplayOutput } from "../kernel/types.js";
import { type ImageBudget, prepareImage } from "./python-images.js";
import type { PythonToolDetails } from "./python-result.js";
import type { ImageContent } from "./types.js";

interface KeptImage {
  cell: number;
  display: DisplayOutput;
}

export class LatestImages {
  private kept: KeptImage[] = [];
  /** Images left out by the limit, per cell (a clear forgets them with the cell's other output). */
  private readonly dropped = new Map<number, number>();

  constructor(private readonly maxImages: number) {}

  add(cell: number, display: DisplayOutput): void {
    this.kept.push({ cell, display });
    while (this.kept.length > this.maxImages) {
      const old = this.kept.shift()!;
      this.dropped.set(old.cell, (this.dropped.get(old.cell) ?? 0) + 1);
    }
  }

  /**
   * A display with this id was updated (update_display_data, or shown again): the kept images it
   * shows become the new one in place, or leave when it is no image now. False when none was kept.
   */
  update(displayId: string, display: DisplayOutput): boolean {
    const before = this.kept.length;
    if (display.type !== "image") {
      this.kept = this.kept.filter((k) => k.display.displayId !== displayId);
      return this.kept.length < before;
    }
    let found = false;
    for (const k of this.kept) {
      if (k.display.displayId !== displayId) continue;
      k.display = display;
      found = true;
    }
    return found;
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

  /** Fits the kept images to the budget; records each in details (and the dropped count). */
  async prepare(budget: Required<ImageBudget>, details: PythonToolDetails): Promise<ImageContent[]> {
    const content: ImageContent[] = [];
    const dropped = this.droppedCount;
    if (dropped) details.droppedImages = dropped;
    for (const { cell, display } of this.kept) {
      const mimeType = display.mimeType ?? "image/png";
      const img = await prepareImage(mimeType, display.data[mimeType], budget);
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
      if (img.data && img.mimeType) content.push({ type: "image", data: img.data, mimeType: img.mimeType });
    }
    return content;
  }
}
