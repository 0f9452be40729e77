/**
 * Rendered lines kept per (width, expanded): a host redraws often with the same input, and
 * highlighting is the costly part. A new input (another object) clears what was kept; a view with a
 * spinner also keys on its frame, so it moves.
 */
import { type RenderOptions, spinner } from "./format.js";

export class RenderCache {
  private input: unknown;
  private readonly kept = new Map<string, string[]>();

  /** The lines for `input` at these options, computed by `render` when not kept. */
  get(input: unknown, o: RenderOptions, render: () => string[]): string[] {
    if (input !== this.input) {
      this.input = input;
      this.kept.clear();
    }
    const key = `${o.width}:${o.expanded ? 1 : 0}:${o.images ?? "none"}:${o.now === undefined ? "" : spinner(o.now)}:${o.startedAt === undefined || o.now === undefined ? "" : Math.floor((o.now - o.startedAt) / 100)}`;
    let lines = this.kept.get(key);
    if (!lines) {
      lines = render();
      this.kept.set(key, lines);
    }
    return lines;
  }

  clear(): void {
    this.input = undefined;
    this.kept.clear();
  }
}
