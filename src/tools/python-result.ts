/**
 * The python tool's result: the details shape (for renderers and hosts) and the text the model
 * reads, in the original's wording (`[i/n] title`, `(ok)`, failed/aborted cell lines); the output
 * body with its per-cell cut notices comes from output-text.ts (docs/output.md).
 */
import type { StatusEvent } from "../kernel/types.js";
import type { CellDump, OutputDump } from "../output/sink.js";
import type { SessionMode } from "../runtime/sessions.js";

export type CellStatus = "pending" | "running" | "ok" | "error" | "aborted" | "skipped";

export interface PythonCellDetails {
  index: number;
  title?: string;
  status: CellStatus;
  durationMs?: number;
  executionCount?: number | null;
  error?: { name: string; value: string };
  /** The error was allowed (allow_errors, or a raises-exception cell); the run went on. */
  allowedError?: boolean;
  /** Why it was aborted (timeout, abort, too many restarts, …). */
  abortReason?: string;
  timedOut?: boolean;
  stdinRequested?: boolean;
  /** The kernel died during this cell and was restarted; the cell ran again (S19). */
  retriedAfterDeath?: boolean;
  /** The kernel was found dead before this cell and restarted first (S18). */
  restartedBeforeRun?: boolean;
  /** What the model was shown of this cell's output (set once it started). */
  output?: PythonCellOutputDetails;
}

/** One cell's output as shown (docs/output.md); counts are of the output since its last clear_output. */
export interface PythonCellOutputDetails {
  lines: number;
  bytes: number;
  /** Some of it was not shown (lines left out, or long lines cut). */
  truncated: boolean;
  /** Line ranges shown, 1-based, inclusive. */
  shownLines: [number, number][];
  /** Lines shown cut (longer than the space left). */
  linesCut: number;
  /** clear_output calls that took effect. */
  clears: number;
  /** Where this output is in the call's artifact (set when it was cut). */
  artifactId?: string;
  artifactLines?: [number, number];
}

export interface PythonImageDetails {
  cell: number;
  mimeType: string;
  width?: number;
  height?: number;
  originalBytes: number;
  included: boolean;
  sentMimeType?: string;
  sentWidth?: number;
  sentHeight?: number;
  bytes?: number;
  reason?: string;
}

/** The whole call's output: the artifact's lines and bytes (headers and clear markers included). */
export interface PythonOutputDetails {
  truncated: boolean;
  totalLines: number;
  totalBytes: number;
  maxBytes: number;
  artifactId?: string;
  artifactUri?: string;
  artifactError?: string;
}

export interface PythonToolDetails {
  mode: SessionMode;
  session: string;
  cwd: string;
  reset: boolean;
  cells: PythonCellDetails[];
  jsonOutputs: { cell: number; data: unknown }[];
  statusEvents: (StatusEvent & { cell: number })[];
  images: PythonImageDetails[];
  /** Images left out by the per-call limit (the latest ones are kept). */
  droppedImages?: number;
  output: PythonOutputDetails;
  durationMs: number;
}

/** Details before anything ran (also what an `Error:` result carries). */
export function emptyDetails(
  mode: SessionMode,
  session: string,
  cwd: string,
  maxBytes: number,
): PythonToolDetails {
  return {
    mode,
    session,
    cwd,
    reset: false,
    cells: [],
    jsonOutputs: [],
    statusEvents: [],
    images: [],
    output: { truncated: false, totalLines: 0, totalBytes: 0, maxBytes },
    durationMs: 0,
  };
}

export function outputDetails(dump: OutputDump, maxBytes: number): PythonOutputDetails {
  return {
    truncated: dump.truncated,
    totalLines: dump.totalLines,
    totalBytes: dump.totalBytes,
    maxBytes,
    artifactId: dump.artifactId,
    artifactUri: dump.artifactId ? `artifact://${dump.artifactId}` : undefined,
    artifactError: dump.artifactError,
  };
}

/** Shown ranges of a cell's lines, e.g. [[1, 20], [39981, 40000]]. */
export function shownRanges(cell: CellDump): [number, number][] {
  const ranges: [number, number][] = [];
  for (const { n } of cell.shown) {
    const last = ranges[ranges.length - 1];
    if (last && last[1] + 1 === n) last[1] = n;
    else ranges.push([n, n]);
  }
  return ranges;
}

export function cellOutputDetails(cell: CellDump, dump: OutputDump): PythonCellOutputDetails {
  const out: PythonCellOutputDetails = {
    lines: cell.lines,
    bytes: cell.bytes,
    truncated: cell.cut,
    shownLines: shownRanges(cell),
    linesCut: cell.shown.filter((l) => l.cutChars > 0).length,
    clears: cell.clears,
  };
  if (cell.cut && dump.artifactId) {
    out.artifactId = dump.artifactId;
    out.artifactLines = [cell.firstArtifactLine, cell.firstArtifactLine + cell.lines - 1];
  }
  return out;
}

export function cellHeader(i: number, n: number, title?: string): string {
  return `[${i}/${n}]${title ? ` ${title}` : ""}`;
}

/** The closing lines: restarts, the failed or aborted cell, stdin, images not included. */
export function summaryLines(d: PythonToolDetails): string[] {
  const lines: string[] = [];
  for (const c of d.cells) {
    if (c.restartedBeforeRun)
      lines.push(
        `The Python kernel of this session had died; it was restarted before cell ${c.index} (earlier state is lost).`,
      );
    if (c.retriedAfterDeath)
      lines.push(
        `The Python kernel died during cell ${c.index}; it was restarted and the cell was run again (side effects of the first run may have happened; earlier state is lost).`,
      );
    if (c.stdinRequested) lines.push("Kernel requested stdin; interactive input is not supported.");
    if (c.status === "error" && c.allowedError) {
      const what = c.error ? `${c.error.name}: ${c.error.value}` : "an error";
      lines.push(`Cell ${c.index} raised ${what} (allowed; the run went on).`);
    } else if (c.status === "error") {
      lines.push(
        c.index > 1
          ? `Cell ${c.index} failed (exit code 1). Earlier cells succeeded—their state persists. Fix only cell ${c.index}.`
          : `Cell ${c.index} failed (exit code 1).`,
      );
    } else if (c.status === "aborted") {
      lines.push(`Cell ${c.index} aborted: ${c.abortReason ?? "Aborted"}`);
    }
  }
  for (const img of d.images) {
    if (!img.included) {
      const size = img.width && img.height ? ` ${img.width}x${img.height}` : "";
      lines.push(
        `[Image from cell ${img.cell} (${img.mimeType}${size}) not included: ${img.reason ?? "unknown reason"}]`,
      );
    }
  }
  return lines;
}

/** The model's text: output body with its cut notices (or a placeholder), dropped images, summary lines. */
export function resultText(body: string, d: PythonToolDetails): string {
  const parts: string[] = [];
  const hasRich = d.images.length > 0 || d.jsonOutputs.length > 0 || (d.droppedImages ?? 0) > 0;
  if (body) parts.push(body);
  else parts.push(hasRich ? "(no text output)" : "(no output)");
  if (d.droppedImages) parts.push(droppedImagesNotice(d));
  parts.push(...summaryLines(d));
  return parts.join("\n");
}

function droppedImagesNotice(d: PythonToolDetails): string {
  const n = d.droppedImages ?? 0;
  const kept = d.images.length;
  return `[${n} earlier image${n === 1 ? "" : "s"} not included (limit: ${kept} image${kept === 1 ? "" : "s"} per call; the latest are kept)]`;
}
