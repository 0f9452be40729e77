/**
 * Turning an IOPub MIME bundle (execute_result / display_data / update_display_data) into a
 * DisplayOutput — text by precedence text/markdown > text/plain > text/html (converted to markdown
 * with turndown + GFM tables) > text/latex > application/json (compact), structured json/image
 * captured — or into status events (no text). `unseenOutputs` lists what no text or image carries (docs/output.md).
 */

import { createRequire } from "node:module";
import type TurndownService from "turndown";
import { randomUUID } from "../sys/crypto.js";
import { type IdStyles, idStyles, type TableNode, tableMarkdown } from "./html-table.js";
import type { DisplayDataContent } from "./messages.js";
import type { DisplayOutput, StatusEvent } from "./types.js";

export const STATUS_MIME = "application/x-nbagent-status";
/** The original tool's status MIME; accepted and re-emitted as ours. */
export const LEGACY_STATUS_MIME = "application/x-xcsh-status";
export const IMAGE_MIMES = ["image/png", "image/jpeg", "image/svg+xml"] as const;

let turndown: TurndownService | undefined;

/** A base64 data URI of an image, as an `<img src>` carries it. */
const DATA_URI = /data:image\/[\w.+-]+;base64,[A-Za-z0-9+/=]+/g;

/**
 * HTML → markdown (tables as GFM tables: html-table.ts; <style>/<script> dropped; text as written,
 * without markdown escaping, so a name like `styled_col` stays what code must write). Base64 images
 * are set aside before the HTML is parsed and put back in the markdown: parsing megabytes of
 * attribute text costs far more than the markdown needs (the tools send such images as images,
 * docs/output.md).
 */
export function htmlToMarkdown(html: string): string {
  const styles = idStyles(html);
  if (!html.includes("data:image/")) return convert(html, styles);
  const uris: string[] = [];
  const mark = `nbagent-data-${randomUUID()}-`;
  const small = html.replace(DATA_URI, (uri) => `${mark}${uris.push(uri) - 1}`);
  const back = new RegExp(`${mark}(\\d+)`, "g");
  return convert(small, styles).replace(back, (whole, i: string) => uris[Number(i)] ?? whole);
}

/** The id styles of the HTML being converted (a table rule reads them). */
let currentStyles: IdStyles = new Map();

function converter(): TurndownService {
  if (turndown) return turndown;
  // Loaded on the first HTML-only display: most executions never need it (and it costs a cold start ~80 ms).
  const require = createRequire(import.meta.url);
  const Turndown = require("turndown") as typeof TurndownService;
  const td = new Turndown({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  // the model reads the markdown, nothing renders it: names keep their underscores and stars
  td.escape = (text: string) => text;
  td.remove(["style", "script"]);
  td.addRule("table", {
    filter: "table",
    replacement: (_content, node) =>
      `\n\n${tableMarkdown(node as unknown as TableNode, cellMarkdown, currentStyles)}\n\n`,
  });
  turndown = td;
  return td;
}

/** A cell's markdown: its text, or the markdown of what it holds (links, images, nested tables). */
function cellMarkdown(cell: TableNode): string {
  const plain = !cell.children || cell.children.length === 0;
  return plain ? (cell.textContent ?? "") : converter().turndown(cell.innerHTML ?? "");
}

function convert(html: string, styles: IdStyles): string {
  const td = converter();
  const before = currentStyles;
  currentStyles = styles;
  try {
    return td.turndown(html);
  } finally {
    currentStyles = before;
  }
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
  ndash: "\u2013",
  mdash: "\u2014",
  hellip: "\u2026",
  times: "\u00d7",
  middot: "\u00b7",
  deg: "\u00b0",
  plusmn: "\u00b1",
  minus: "\u2212",
  le: "\u2264",
  ge: "\u2265",
  ne: "\u2260",
  larr: "\u2190",
  rarr: "\u2192",
  copy: "\u00a9",
  euro: "\u20ac",
  pound: "\u00a3",
};

/**
 * Markdown with its HTML character references decoded (`region &lt;chr&gt;` → `region <chr>`, as
 * IRkernel's data.frame markdown renders): the model reads the characters, not their escapes.
 */
export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,8});/gi, (whole, ref: string) => {
    if (ref[0] !== "#") return NAMED_ENTITIES[ref] ?? NAMED_ENTITIES[ref.toLowerCase()] ?? whole;
    const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
      ? String.fromCodePoint(code)
      : whole;
  });
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

/**
 * Python's default object repr, e.g. `<IPython.core.display.HTML object>` or
 * `<pandas.io.formats.style.Styler object at 0x7f…>`.
 */
const DEFAULT_REPR = /^<[\w.]+ (?:object(?: at 0x[0-9a-fA-F]+)?|at 0x[0-9a-fA-F]+)>$/;

/** Text forms of one output: when one is shown, the others are the same content. */
const TEXT_MIMES = ["text/markdown", "text/plain", "text/html", "text/latex"];

export interface DisplayTextSource {
  text: string;
  /** The MIME type the text came from (undefined: the bundle has no text form). */
  mimeType?: string;
}

/**
 * The MIME type a bundle's text comes from, by precedence markdown > plain > html > latex >
 * application/json (undefined: none). A plain text that is only Python's default repr
 * (`<IPython.core.display.JSON object>`, `<… object at 0x…>`) says nothing: a richer text form wins
 * over it.
 */
export function displayTextMime(data: Record<string, unknown>): string | undefined {
  if (data["text/markdown"] !== undefined) return "text/markdown";
  const plain = data["text/plain"] !== undefined ? asText(data["text/plain"]) : undefined;
  if (plain !== undefined && !DEFAULT_REPR.test(plain.trim())) return "text/plain";
  if (data["text/html"] !== undefined) return "text/html";
  if (data["text/latex"] !== undefined) return "text/latex";
  const json = data["application/json"];
  if (json !== undefined && (typeof json === "string" || JSON.stringify(json) !== undefined))
    return "application/json";
  return plain !== undefined ? "text/plain" : undefined;
}

/**
 * Text by MIME precedence (displayTextMime): markdown (HTML character references decoded), plain,
 * html→markdown, latex (its source), application/json (compact).
 */
export function displayTextSource(data: Record<string, unknown>): DisplayTextSource {
  const mimeType = displayTextMime(data);
  if (mimeType === undefined) return { text: "" };
  const value = data[mimeType];
  if (mimeType === "application/json")
    return { text: typeof value === "string" ? value : (JSON.stringify(value) ?? ""), mimeType };
  const text = asText(value);
  if (mimeType === "text/markdown") return { text: decodeEntities(text), mimeType };
  if (mimeType === "text/html") return { text: htmlToMarkdown(text), mimeType };
  return { text, mimeType };
}

export function displayText(data: Record<string, unknown>): string {
  return displayTextSource(data).text;
}

export interface UnseenOutput {
  mimeType: string;
  /** Size of its payload (UTF-8 bytes of its text or JSON). */
  bytes: number;
}

/**
 * The MIME types of a bundle that neither its text nor an image carries (plotly, vega, widgets,
 * javascript, …): the model cannot see them, so the text names them. Other text forms of a shown
 * text, and the image types (sent as images), are not listed.
 */
export function unseenOutputs(data: Record<string, unknown>, shownMime?: string): UnseenOutput[] {
  const unseen: UnseenOutput[] = [];
  for (const [mimeType, value] of Object.entries(data)) {
    if (mimeType === shownMime || mimeType === STATUS_MIME || mimeType === LEGACY_STATUS_MIME) continue;
    if ((IMAGE_MIMES as readonly string[]).includes(mimeType)) continue;
    if (shownMime && TEXT_MIMES.includes(mimeType)) continue;
    const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
    unseen.push({ mimeType, bytes: Buffer.byteLength(text) });
  }
  return unseen;
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
