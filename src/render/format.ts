/**
 * Pieces every view shares: options, status marks, durations, a collapsible block of lines with an
 * honest `… N more lines` note, and the final fit of every line to the width.
 */

import { plural } from "../sys/units.js";
import type { RenderTheme } from "./theme.js";
import { truncateToWidth, visibleWidth, wrapLines } from "./width.js";

export type ImageProtocol = "kitty" | "iterm2" | "sixel" | "none";

export interface RenderOptions {
  /** Columns available; no line returned is wider. */
  width: number;
  /** Collapsed (a few lines per part) or expanded (everything). */
  expanded: boolean;
  theme: RenderTheme;
  /** How images are drawn (default none: a `[image 640×480 PNG]` placeholder). */
  images?: ImageProtocol;
  /** Milliseconds since the epoch, for spinners and running durations (default Date.now()). */
  now?: number;
  /** When the call started (ms since the epoch): the running time of a cell still going. */
  startedAt?: number;
}

/** Lines a collapsed block keeps. */
export const COLLAPSED = { code: 6, output: 8, summary: 3, cells: 6, json: 16 } as const;

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export function spinner(now: number): string {
  return SPINNER[Math.floor(now / 80) % SPINNER.length];
}

/** 340ms, 2.1s, 1m 05s, 1h 02m. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/**
 * Lines prefixed by a gutter (`│ `), wrapped to the width; collapsed to the first (or last) `keep`
 * lines with a note saying how many more there are.
 */
export function block(
  lines: string[],
  o: RenderOptions,
  keep: number,
  opts: { from?: "head" | "tail"; gutter?: string; noun?: string } = {},
): string[] {
  const t = o.theme;
  const gutter = opts.gutter ?? t.fg("border", "│ ");
  const inner = Math.max(1, o.width - visibleWidth(gutter));
  let shown = lines;
  let more = 0;
  if (!o.expanded && lines.length > keep) {
    more = lines.length - keep;
    shown = opts.from === "tail" ? lines.slice(-keep) : lines.slice(0, keep);
  }
  const body = wrapLines(shown, inner).map((l) => gutter + l);
  if (!more) return body;
  const note = gutter + t.fg("dim", `… ${plural(more, opts.noun ?? "more line")}`);
  return opts.from === "tail" ? [note, ...body] : [...body, note];
}

/** Every line cut to the width (the last guard; views wrap content before this). */
export function fit(lines: string[], width: number): string[] {
  return lines.flatMap((l) => l.split("\n")).map((l) => truncateToWidth(l, width));
}

/** The text parts of a result, joined. */
export function resultText(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content
    .filter((c) => c.type === "text" && typeof c.text === "string")
    .map((c) => c.text as string)
    .join("\n");
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}
