/**
 * Artifacts as MCP resources (docs/mcp.md): the template `artifact://{id}`, read page by page with
 * `artifact://<id>?offset=LINE&limit=LINES&max_bytes=N`. The list holds the artifacts this
 * server session's results named (newest first), so one HTTP client's list never shows another's.
 */
import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { ArtifactReadError } from "../output/artifact-pages.js";
import { ARTIFACT_SCHEME, type ArtifactStore, parseArtifactId } from "../output/artifacts.js";
import {
  ARTIFACT_PAGE_BYTES,
  ARTIFACT_PAGE_LINES,
  ARTIFACT_PAGE_MAX_BYTES,
} from "../output/model-budgets.js";
import { inUnit } from "../sys/units.js";
import { refusedText } from "../tools/artifact/artifact.js";
import { protocolError } from "./errors.js";
import { ErrorCode } from "./sdk.js";

/** MCP's "resource not found" error code. */
export const RESOURCE_NOT_FOUND = -32002;
const MAX_LISTED = 100;

export const ARTIFACT_TEMPLATE: ResourceTemplate = {
  uriTemplate: "artifact://{id}",
  name: "artifact",
  title: "Full output of a tool call",
  description:
    "The whole output a tool result cut short (it names artifact://<id>). Read in pages: " +
    `artifact://<id>?offset=LINE&limit=LINES (column=BYTE continues a cut line; 1-based line, default ${ARTIFACT_PAGE_LINES} lines, at most ` +
    `${inUnit(ARTIFACT_PAGE_BYTES, "KiB")} unless max_bytes=N, up to ${inUnit(ARTIFACT_PAGE_MAX_BYTES, "MiB")}).`,
  mimeType: "text/plain",
};

/** The artifacts named by this session's results, newest first. */
export class SeenArtifacts {
  private readonly ids: string[] = [];

  add(id: string): void {
    const at = this.ids.indexOf(id);
    if (at >= 0) this.ids.splice(at, 1);
    this.ids.unshift(id);
    if (this.ids.length > MAX_LISTED) this.ids.length = MAX_LISTED;
  }

  list(store: ArtifactStore): Resource[] {
    return this.ids
      .filter((id) => store.resolve(id) !== undefined)
      .map((id) => ({ uri: `${ARTIFACT_SCHEME}${id}`, name: id, mimeType: "text/plain" }));
  }
}

interface PageRequest {
  id: string;
  offset?: number;
  column?: number;
  limit?: number;
  maxBytes?: number;
}

function invalid(message: string): Error {
  return protocolError(ErrorCode.InvalidParams, message);
}

/** Parses `artifact://<id>[?offset=N&limit=M&max_bytes=B]`. */
export function parseArtifactUri(uri: string): PageRequest {
  if (!uri.startsWith(ARTIFACT_SCHEME))
    throw invalid(`Unknown resource ${uri}: only artifact://<id> exists.`);
  const q = uri.indexOf("?");
  const ref = q < 0 ? uri : uri.slice(0, q);
  const id = parseArtifactId(ref);
  if (!id) throw invalid(`Not an artifact id: ${ref}. Use the artifact://<id> from a tool result.`);
  const page: PageRequest = { id };
  if (q < 0) return page;
  const count = (key: string, value: string, max = Number.MAX_SAFE_INTEGER) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > max)
      throw invalid(`${key} must be a whole number from 1 to ${max}, not '${value}' (in ${uri}).`);
    return n;
  };
  for (const [key, value] of new URLSearchParams(uri.slice(q + 1))) {
    if (key === "offset") page.offset = count(key, value);
    else if (key === "column") page.column = count(key, value);
    else if (key === "limit") page.limit = count(key, value);
    else if (key === "max_bytes") page.maxBytes = count(key, value, ARTIFACT_PAGE_MAX_BYTES);
    else throw invalid(`Unknown parameter '${key}' in ${uri}: use offset, column, limit and max_bytes.`);
  }
  return page;
}

/**
 * One page of an artifact. When more follows, the text ends with a line saying where it continues
 * (the reader may be a model); `_meta` carries the same as numbers.
 */
export async function readArtifact(store: ArtifactStore, uri: string): Promise<ReadResourceResult> {
  const page = parseArtifactUri(uri);
  const limit = page.limit ?? ARTIFACT_PAGE_LINES;
  const maxBytes = page.maxBytes ?? ARTIFACT_PAGE_BYTES;
  let slice: Awaited<ReturnType<ArtifactStore["read"]>>;
  try {
    slice = await store.read(page.id, { offset: page.offset, column: page.column, limit, maxBytes });
  } catch (err) {
    if (!(err instanceof ArtifactReadError)) throw err;
    if (err.code === "not_found")
      throw protocolError(
        RESOURCE_NOT_FOUND,
        `Artifact not found: ${ARTIFACT_SCHEME}${page.id} (artifacts are kept 7 days). Use the artifact://<id> from a tool result.`,
      );
    if (err.code === "refused") throw invalid(refusedText(page.id, err.facts));
    throw invalid(`${err.message} (${ARTIFACT_SCHEME}${page.id})`);
  }
  const base = `${ARTIFACT_SCHEME}${page.id}`;
  let text = slice.text;
  let nextUri: string | undefined;
  if (slice.next) {
    const at = `offset=${slice.next.offset}${slice.next.column ? `&column=${slice.next.column}` : ""}`;
    nextUri = `${base}?${at}${page.limit ? `&limit=${page.limit}` : ""}${page.maxBytes ? `&max_bytes=${page.maxBytes}` : ""}`;
    const shown = slice.endLine >= slice.startLine ? `lines ${slice.startLine}-${slice.endLine}` : "nothing";
    const cut = slice.partial.find((x) => x.to < x.lineBytes);
    const where = cut
      ? `line ${cut.line} continues at byte ${cut.to + 1} of ${cut.lineBytes}`
      : "more follows";
    text += `${text.endsWith("\n") || !text ? "" : "\n"}[${base}: ${shown} of ${slice.lines} shown; ${where}: read ${nextUri}]\n`;
  }
  return {
    contents: [
      {
        uri,
        mimeType: "text/plain",
        text,
        _meta: {
          startLine: slice.startLine,
          startColumn: slice.startColumn,
          endLine: slice.endLine,
          lines: slice.lines,
          sizeBytes: slice.sizeBytes,
          hasMore: slice.next !== undefined,
          ...(nextUri ? { nextUri, next: slice.next } : {}),
        },
      },
    ],
  };
}
