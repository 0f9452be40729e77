/**
 * The model's budgets: how much of each kind one result shows it at most. Each is defined here once;
 * a tool's options may set another value, and the tools' descriptions are written from the value in
 * use, so what a description promises follows the option. output/ is the lowest layer that keeps to
 * them (sink.ts, artifacts.ts); tools/, cli/ and mcp/ read them from here.
 */
import { KiB, MiB } from "../sys/units.js";

/**
 * Bytes of cell output text one python call or notebook run shows, shared by its cells (sink.ts);
 * what does not fit is shown as a head and tail, and the whole output is kept as an artifact.
 */
export const CALL_OUTPUT_BYTES = 50 * KiB;

/** Bytes of text one artifact page or match list holds (newlines not counted); a longer first line is cut. */
export const ARTIFACT_PAGE_BYTES = 50 * KiB;

/** The most bytes an MCP resource read may ask one artifact page to hold (max_bytes). */
export const ARTIFACT_PAGE_MAX_BYTES = 4 * MiB;

/** Lines of one artifact page as `nbagent artifact` and an MCP resource read page it. */
export const ARTIFACT_PAGE_LINES = 2000;

/** Lines of one artifact tool page, and matching lines one search lists. */
export const ARTIFACT_TOOL_LINES = 200;

/** Characters of a notebook tool `read` result (the source of a single cell read may take four times as many). */
export const READ_CHARS = 40_000;

/** What images one result sends the model (python/images.ts brings each within it, or says why not). */
export interface ImageBudget {
  /** Longest edge in pixels (default 1568). */
  maxDimension?: number;
  /** Pixels in total (default 1.15 MP). */
  maxPixels?: number;
  /** Encoded bytes (default 750 KiB). */
  maxBytes?: number;
  /** Images per call sent to the model (default 8); a notebook read sends the first ones. */
  maxImages?: number;
}

export const DEFAULT_IMAGE_BUDGET: Required<ImageBudget> = {
  maxDimension: 1568,
  maxPixels: 1_150_000,
  maxBytes: 750 * KiB,
  maxImages: 8,
};
