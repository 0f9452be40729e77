/**
 * A pi TUI component (render(width) → lines) over a drawing function: pi calls render on every
 * frame, so the lines are kept for the width they were drawn at until pi invalidates them.
 */
import type { Component } from "@mariozechner/pi-tui";

export class LinesComponent implements Component {
  #width = -1;
  #lines: string[] = [];

  constructor(private readonly draw: (width: number) => string[]) {}

  render(width: number): string[] {
    if (width !== this.#width) {
      this.#lines = this.draw(width);
      this.#width = width;
    }
    return this.#lines;
  }

  invalidate(): void {
    this.#width = -1;
  }
}
