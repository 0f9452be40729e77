/**
 * The `artifact` tool: reads a full output kept as artifact://<id> — a page of numbered lines, or
 * the lines matching a pattern — and says exactly which call reads on. Read-only. Rules:
 * docs/artifacts.md.
 */
import type { Static } from "@sinclair/typebox";
import {
  ARTIFACT_PAGE_BYTES,
  ARTIFACT_SCHEME,
  ARTIFACT_TOOL_LINES,
  ArtifactReadError,
  type ArtifactSearchResult,
  type ArtifactSlice,
  type ArtifactStore,
  parseArtifactId,
  SEARCH_OVERLAP,
  SEARCH_WINDOW,
} from "../../output/index.js";
import { thousands } from "../../sys/thousands.js";
import { bytesTenthKB, inUnit, plural } from "../../sys/units.js";
import type { ToolDescriptor } from "../descriptor.js";
import { saveFailure } from "../output-text.js";
import { type ParamWords, paramProblem } from "../param-problem.js";
import { Type } from "../schema.js";
import { errorResult, type Tool, type ToolResult } from "../types.js";

export const artifactSchema = Type.Object(
  {
    id: Type.String({
      description: 'The artifact to read: "artifact://<id>" as a result names it, or just "<id>"',
    }),
    offset: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "1-based line to start at (default 1); with pattern, the line to list matches from",
      }),
    ),
    column: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          "1-based byte within line `offset` to start at: continues a line longer than one page (the result that cut it gives the value)",
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: `Lines per page (default ${ARTIFACT_TOOL_LINES}); a page also stops at ${inUnit(ARTIFACT_PAGE_BYTES, "KB")}`,
      }),
    ),
    pattern: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "List only the lines matching this JavaScript regular expression, with their line numbers (case-sensitive; start it with (?i) to ignore case)",
      }),
    ),
  },
  { additionalProperties: false },
);

export type ArtifactParams = Static<typeof artifactSchema>;

/** The exact parameters of a call (the next page, a skip, a read at a match). */
export type ArtifactCall = { id: string; pattern?: string; offset: number; column?: number; limit?: number };

export interface ArtifactToolDetails {
  id?: string;
  uri?: string;
  /** Lines and bytes in the artifact. */
  lines?: number;
  sizeBytes?: number;
  /** A page: its first line and byte, its last line, the lines shown in part. */
  startLine?: number;
  startColumn?: number;
  endLine?: number;
  partial?: ArtifactSlice["partial"];
  /** A search: matching lines in all, before `offset`, and the line numbers listed. */
  search?: { pattern: string; total: number; before: number; listed: number[] };
  /** The call that reads on; undefined at the end. */
  next?: ArtifactCall;
  /** Why the call failed. */
  error?: string;
  /** The artifact holds only the start of its output (its writer failed: disk full, …). */
  incomplete?: { sizeBytes?: number; reason?: string; message?: string };
}

export interface ArtifactToolOptions {
  artifacts: ArtifactStore;
  /** Bytes one page or match list holds at most (default ARTIFACT_PAGE_BYTES: 50 KiB). */
  maxBytes?: number;
}

/** How the shared parameter check (param-problem.ts) words the artifact tool's refusals, with the names a model may reach for. */
const ARTIFACT_WORDS: ParamWords = {
  tool: "artifact",
  example: '{"id":"<id>","offset":<line>}',
  nearKeys: {
    "": {
      uri: "id",
      artifact: "id",
      artifact_id: "id",
      ref: "id",
      line: "offset",
      start: "offset",
      start_line: "offset",
      from: "offset",
      byte: "column",
      col: "column",
      lines: "limit",
      count: "limit",
      max_lines: "limit",
      regex: "pattern",
      grep: "pattern",
      search: "pattern",
      query: "pattern",
    },
  },
};

const DESCRIPTION = [
  "Read a full output that a result cut short and kept as artifact://<id> (python and notebook results",
  'point to it: "Read it with the artifact tool: {"id":"<id>","offset":<line>}"). Read-only.',
  `Returns numbered lines: from line offset (1-based, default 1), at most limit lines (default ${ARTIFACT_TOOL_LINES})`,
  `and ${inUnit(ARTIFACT_PAGE_BYTES, "KB")}. Every result says which lines of how many it shows and ends with the exact next call`,
  '("Next: {…}"). A line longer than a page is cut and continues from byte column of that line: copy the Next call.',
  "pattern (a JavaScript regular expression, case-sensitive; start it with (?i) to ignore case) lists the matching",
  "lines with their numbers and how many match in all, from line offset on; then read around a match with offset.",
  "Artifacts are kept for 7 days.",
].join("\n");

const n = (x: number) => thousands(x);
const call = (c: ArtifactCall) => JSON.stringify(c);

function range(a: number, b: number, word = "line"): string {
  return a === b ? `${word} ${n(a)}` : `${word}s ${n(a)}-${n(b)}`;
}

/** "Lines 1-200 of 40,000", "Bytes 1-51,200 of line 5 (300,000 bytes), of 10 lines" … */
function shownRange(page: ArtifactSlice): string {
  const head = page.partial.find((p) => p.line === page.startLine && p.from > 1);
  const cut = page.next?.column ? page.partial.find((p) => p.line === page.next?.offset) : undefined;
  const parts: string[] = [];
  if (head && head === cut) {
    parts.push(
      `bytes ${n(head.from)}-${n(head.to)} of line ${n(head.line)} (${plural(head.lineBytes, "byte")})`,
    );
  } else {
    if (head) parts.push(`bytes ${n(head.from)}-${n(head.to)} of line ${n(head.line)} (its end)`);
    const first = head ? page.startLine + 1 : page.startLine;
    const last = cut ? page.endLine - 1 : page.endLine;
    if (last >= first) parts.push(range(first, last));
    if (cut) parts.push(`bytes 1-${n(cut.to)} of line ${n(cut.line)} (${plural(cut.lineBytes, "byte")})`);
  }
  const text = parts.join(", then ");
  const whole = parts.length === 1 && !head && !cut;
  return `${text[0].toUpperCase()}${text.slice(1)}${whole ? ` of ${n(page.lines)}` : `, of ${plural(page.lines, "line")}`}`;
}

/** The page's lines, each after its number and a tab; a cut line ends with a marker. */
function numbered(page: ArtifactSlice): string {
  const lines = page.text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const width = String(page.endLine).length;
  const out = lines.map((l, i) => `${String(page.startLine + i).padStart(width)}\t${l}`);
  const cut = page.next?.column ? page.partial.find((p) => p.line === page.next?.offset) : undefined;
  if (cut) out.push(`[line ${n(cut.line)} continues: ${plural(cut.lineBytes - cut.to, "more byte")}]`);
  return out.join("\n");
}

function pageResult(page: ArtifactSlice, given: ArtifactParams): ToolResult<ArtifactToolDetails> {
  const uri = `${ARTIFACT_SCHEME}${page.id}`;
  const details: ArtifactToolDetails = {
    id: page.id,
    uri,
    lines: page.lines,
    sizeBytes: page.sizeBytes,
    startLine: page.startLine,
    startColumn: page.startColumn,
    endLine: page.endLine,
    partial: page.partial,
  };
  if (page.lines === 0) {
    return { content: [{ type: "text", text: `${uri} is empty (0 lines).` }], details };
  }
  const limit = given.limit !== undefined ? { limit: given.limit } : {};
  const lines = [`${shownRange(page)} of ${uri} (${bytesTenthKB(page.sizeBytes)}):`, numbered(page)];
  if (page.next) {
    details.next = { id: page.id, ...page.next, ...limit };
    let nextLine = `Next: ${call(details.next)}`;
    if (page.next.column && page.next.offset < page.lines) {
      nextLine += ` — or skip the rest of line ${n(page.next.offset)}: ${call({ id: page.id, offset: page.next.offset + 1, ...limit })}`;
    }
    lines.push(nextLine);
  } else if (page.incomplete) {
    lines.push(`End of ${uri} — ${notSaved(page.sizeBytes, page.incomplete)}`);
  } else lines.push(`End of ${uri}.`);
  if (page.incomplete) details.incomplete = { sizeBytes: page.sizeBytes, ...page.incomplete };
  return { content: [{ type: "text", text: lines.join("\n") }], details };
}

/** "it ends at 1,048,576 bytes: the rest of the output was not saved (the disk is full: …)." */
function notSaved(sizeBytes: number, incomplete: { reason?: string; message?: string }): string {
  return `it ends at ${plural(sizeBytes, "byte")}: the rest of the output was not saved (${saveFailure(incomplete.message, incomplete.reason)}).`;
}

function searchResult(found: ArtifactSearchResult, offset: number): ToolResult<ArtifactToolDetails> {
  const uri = `${ARTIFACT_SCHEME}${found.id}`;
  const pattern = found.pattern.source;
  const shownPattern = `${JSON.stringify(pattern)}${found.pattern.ignoreCase ? "" : " (case-sensitive)"}`;
  const details: ArtifactToolDetails = {
    id: found.id,
    uri,
    lines: found.lines,
    sizeBytes: found.sizeBytes,
    search: { pattern, total: found.total, before: found.before, listed: found.matches.map((m) => m.line) },
  };
  const out: string[] = [];
  const from = offset > 1 ? ` from line ${n(offset)} on` : "";
  if (found.total === 0) {
    out.push(`No line of ${uri} (${plural(found.lines, "line")}) matches ${shownPattern}.`);
    if (!found.pattern.ignoreCase) out.push("Start the pattern with (?i) to ignore case.");
  } else if (found.matches.length === 0) {
    out.push(
      `No line${from} of ${uri} matches ${shownPattern}; ${plural(found.before, "line")} before line ${n(offset)} ${found.before === 1 ? "does" : "do"}: ${call({ id: found.id, pattern, offset: 1 })}`,
    );
  } else {
    const a = found.before + 1;
    const b = found.before + found.matches.length;
    out.push(
      `${plural(found.total, "line")} of ${n(found.lines)} in ${uri} ${found.total === 1 ? "matches" : "match"} ${shownPattern}. ${a === b ? `Match ${n(a)}` : `Matches ${n(a)}-${n(b)}`}${from}:`,
    );
    const width = String(found.matches.at(-1)?.line ?? 1).length;
    for (const m of found.matches) {
      const before = m.whole || m.textColumn === 1 ? "" : "…";
      const after = m.whole || m.textColumn - 1 + Buffer.byteLength(m.text) >= m.lineBytes ? "" : "…";
      let line = `${String(m.line).padStart(width)}\t${before}${m.text}${after}`;
      if (!m.whole) {
        line += ` [line ${n(m.line)} is ${plural(m.lineBytes, "byte")}; the match is at byte ${n(m.column)}; read there: ${call({ id: found.id, offset: m.line, column: m.textColumn })}]`;
      }
      out.push(line);
    }
    if (found.next !== undefined) {
      details.next = { id: found.id, pattern, offset: found.next };
      out.push(`Next matches: ${call(details.next)}`);
    } else out.push("No more matches.");
  }
  if (found.windowed > 0) {
    const window = inUnit(SEARCH_WINDOW, "MB");
    const overlap = inUnit(SEARCH_OVERLAP, "KB");
    out.push(
      `(${plural(found.windowed, "line")} longer than ${window} ${found.windowed === 1 ? "was" : "were"} searched in ${window} windows overlapping by ${overlap}: a match longer than ${overlap} across a window edge would not be found.)`,
    );
  }
  return { content: [{ type: "text", text: out.join("\n") }], details };
}

/**
 * What the model (or a person) reads when an id names something the store would not read: a link, a
 * FIFO or device, another user's file (docs/artifacts.md, "What a kernel can plant").
 */
export function refusedText(id: string, f: ArtifactReadError["facts"]): string {
  const uri = `${ARTIFACT_SCHEME}${id}`;
  const where = f.kernelWritable
    ? "the session's artifacts folder, which code in a kernel can write"
    : "nbagent's own output folder";
  const what =
    f.refusal === "symlink"
      ? `a symbolic link in ${where}, not a file nbagent wrote. nbagent never follows such a link, so nothing was read through it`
      : f.refusal === "foreign"
        ? `a file of another user${f.ownerUid === undefined ? "" : ` (uid ${f.ownerUid})`} in ${where}, not a file nbagent wrote, so it was not read`
        : `something that is not a regular file (a FIFO, a device or a folder) in ${where}, so it was not read`;
  return `${uri} names ${what}. Pass the artifact://<id> a result printed; to look at a file your own code wrote, open it in the kernel with the python tool.`;
}

function readError(err: ArtifactReadError, params: ArtifactParams, id: string): string {
  const f = err.facts;
  const uri = `${ARTIFACT_SCHEME}${id}`;
  switch (err.code) {
    case "refused":
      return refusedText(id, f);
    case "not_found":
      return `${uri} not found. Pass the id exactly as a result printed it (artifact://<id>); artifacts older than 7 days are removed.`;
    case "past_end": {
      const cut = f.incomplete
        ? `; the rest of the output was not saved (${saveFailure(undefined, f.incomplete.reason)})`
        : "";
      if (!f.lines) return `offset ${n(params.offset ?? 1)} is past the end: ${uri} is empty${cut}.`;
      const last = Math.max(1, f.lines - ARTIFACT_TOOL_LINES + 1);
      const again =
        params.pattern === undefined ? { id, offset: last } : { id, pattern: params.pattern, offset: 1 };
      return `offset ${n(params.offset ?? 1)} is past the end: ${uri} has ${plural(f.lines, "line")}${f.sizeBytes === undefined ? "" : ` (${plural(f.sizeBytes, "byte")})`}${cut}. ${params.pattern === undefined ? "Its last page" : "Search from the top"}: ${call(again)}`;
    }
    case "column_past_end":
      return `column ${n(f.column ?? 0)} is past the end of line ${n(f.line ?? 0)} of ${uri}, which has ${plural(f.lineBytes ?? 0, "byte")}. Read the line from its start: ${call({ id, offset: f.line ?? 1 })}`;
    case "bad_pattern":
      return `pattern ${JSON.stringify(params.pattern)} is not a valid JavaScript regular expression (${err.message}). Escape special characters with a backslash to match them literally: \\( (in JSON "\\\\(").`;
  }
}

/** The artifact tool's descriptor (tools/descriptor.ts). */
export const artifactDescriptor: ToolDescriptor<ArtifactParams, ArtifactToolDetails> = {
  name: "artifact",
  label: "Artifact",
  parameters: artifactSchema,
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  describe: () => DESCRIPTION,
  // A result about an artifact (a page, a search, a read that failed) names it as its uri.
  refs: (details) => ({ artifacts: details.uri && details.id ? [details.id] : [] }),
  create: ({ runtime }) => createArtifactTool({ artifacts: runtime.artifacts }),
};

export function createArtifactTool(options: ArtifactToolOptions): Tool<ArtifactParams, ArtifactToolDetails> {
  const maxBytes = options.maxBytes ?? ARTIFACT_PAGE_BYTES;
  return {
    name: artifactDescriptor.name,
    label: artifactDescriptor.label,
    description: DESCRIPTION,
    parameters: artifactSchema,
    async execute(_toolCallId, params) {
      const problem = paramProblem(artifactSchema, params, ARTIFACT_WORDS);
      if (problem) return errorResult(problem, { error: "invalid_params" });
      const id = parseArtifactId(params.id);
      if (!id) {
        return errorResult(
          `${JSON.stringify(params.id)} is not an artifact id. Pass the artifact://<id> a result printed, e.g. {"id":"artifact://mb1x2k-0a1b2c3d4e"}.`,
          { error: "not_found" },
        );
      }
      if (params.pattern !== undefined && params.column !== undefined) {
        return errorResult(
          "column continues a cut line when paging; it does not combine with pattern. Drop one of them.",
          { id, error: "invalid_params" },
        );
      }
      try {
        if (params.pattern !== undefined) {
          const found = await options.artifacts.search(id, params.pattern, {
            offset: params.offset,
            limit: params.limit ?? ARTIFACT_TOOL_LINES,
            maxBytes,
          });
          return searchResult(found, params.offset ?? 1);
        }
        const page = await options.artifacts.read(id, {
          offset: params.offset,
          column: params.column,
          limit: params.limit ?? ARTIFACT_TOOL_LINES,
          maxBytes,
        });
        return pageResult(page, params);
      } catch (err) {
        if (!(err instanceof ArtifactReadError)) throw err;
        return errorResult(readError(err, params, id), {
          id,
          uri: `${ARTIFACT_SCHEME}${id}`,
          lines: err.facts.lines,
          error: err.code,
        });
      }
    },
  };
}
