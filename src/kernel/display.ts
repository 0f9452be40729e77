/**
 * S25: turning an IOPub MIME bundle (execute_result / display_data / update_display_data) into a
 * DisplayOutput — text by precedence text/markdown > text/plain > text/html (converted to markdown
 * with turndown + GFM tables), structured json/image captured — or into status events (no text).
 */
import { createRequire } from "node:module";
import type TurndownService from "turndown";
import type { DisplayDataContent } from "./messages.js";
import type { DisplayOutput, StatusEvent } from "./types.js";

export const STATUS_MIME = "application/x-nbagent-status";
/** The original tool's status MIME; accepted and re-emitted as ours. */
export const LEGACY_STATUS_MIME = "application/x-xcsh-status";
export const IMAGE_MIMES = ["image/png", "image/jpeg", "image/svg+xml"] as const;

let turndown: TurndownService | undefined;

/** HTML → markdown (tables as GFM tables; <style>/<script> dropped). */
export function htmlToMarkdown(html: string): string {
  if (!turndown) {
    // Loaded on the first HTML-only display: most executions never need it (and it costs a cold start ~80 ms).
    const require = createRequire(import.meta.url);
    const Turndown = require("turndown") as typeof TurndownService;
    const { tables } = require("turndown-plugin-gfm") as { tables: TurndownService.Plugin };
    turndown = new Turndown({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
    turndown.use(tables);
    turndown.remove(["style", "script"]);
  }
  return turndown.turndown(html);
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.join("");
  return value === undefined || value === null ? "" : String(value);
}

function toStatusEvents(value: unknown): StatusEvent[] {
  let v = value;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return [{ op: "status", message: v }];
    }
  }
  const list = Array.isArray(v) ? v : [v];
  return list
    .filter((e): e is Record<string, unknown> => typeof e === "object" && e !== null)
    .map((e) => ({ ...e, op: typeof e.op === "string" ? e.op : "status" }));
}

/** Python's default object repr, e.g. `<IPython.core.display.HTML object>`. */
const DEFAULT_REPR = /^<[\w.]+ object>$/;

/** Text by MIME precedence markdown > plain > html→markdown. */
export function displayText(data: Record<string, unknown>): string {
  if (data["text/markdown"] !== undefined) return asText(data["text/markdown"]);
  const html = data["text/html"];
  if (data["text/plain"] !== undefined) {
    const plain = asText(data["text/plain"]);
    // `<IPython.core.display.HTML object>` says nothing: the HTML is the content then.
    if (html === undefined || !DEFAULT_REPR.test(plain)) return plain;
  }
  if (html !== undefined) return htmlToMarkdown(asText(html));
  return "";
}

export interface ConvertedDisplay {
  /** Null when the bundle carried only status events. */
  display: DisplayOutput | null;
  statusEvents: StatusEvent[];
}

export function convertDisplay(
  source: DisplayOutput["source"],
  content: DisplayDataContent & { execution_count?: number | null },
): ConvertedDisplay {
  const data = (content.data ?? {}) as Record<string, unknown>;
  const metadata = (content.metadata ?? {}) as Record<string, unknown>;
  const status = data[STATUS_MIME] ?? data[LEGACY_STATUS_MIME];
  if (status !== undefined) return { display: null, statusEvents: toStatusEvents(status) };
  const image = IMAGE_MIMES.find((m) => data[m] !== undefined);
  const display: DisplayOutput = {
    type: image ? "image" : data["application/json"] !== undefined ? "json" : "text",
    data,
    metadata,
    text: displayText(data),
    source,
  };
  if (image) display.mimeType = image;
  if (source === "execute_result") display.executionCount = content.execution_count ?? null;
  const displayId = content.transient?.display_id;
  if (typeof displayId === "string") display.displayId = displayId;
  return { display, statusEvents: [] };
}
