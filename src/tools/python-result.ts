/**
 * The python tool's result: the details shape (for renderers and hosts) and the text the model
 * reads, in the original's wording (`[i/n] title`, `(ok)`, failed/aborted cell lines, truncation
 * notice with the artifact pointer).
 */
import type { StatusEvent } from "../kernel/types.js";
import type { OutputDump } from "../output/sink.js";
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

export interface PythonOutputDetails {
  truncated: boolean;
  totalLines: number;
  totalBytes: number;
  outputLines: number;
  firstLine: number;
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
    output: { truncated: false, totalLines: 0, totalBytes: 0, outputLines: 0, firstLine: 1, maxBytes },
    durationMs: 0,
  };
}

export function outputDetails(dump: OutputDump, maxBytes: number): PythonOutputDetails {
  return {
    truncated: dump.truncated,
    totalLines: dump.totalLines,
    totalBytes: dump.totalBytes,
    outputLines: dump.outputLines,
    firstLine: dump.firstLine,
    maxBytes,
    artifactId: dump.artifactId,
    artifactUri: dump.artifactId ? `artifact://${dump.artifactId}` : undefined,
    artifactError: dump.artifactError,
  };
}

function kb(bytes: number): string {
  return `${Math.round(bytes / 1024)}KB`;
}

/** `[Showing lines A-B of N (50KB limit). Read artifact://<id> for full output]` (S32). */
export function truncationNotice(o: PythonOutputDetails): string {
  const range = `[Showing lines ${o.firstLine}-${o.firstLine + Math.max(0, o.outputLines - 1)} of ${o.totalLines} (${kb(o.maxBytes)} limit).`;
  if (o.artifactUri) return `${range} Read ${o.artifactUri} for full output]`;
  return `${range} The full output could not be saved${o.artifactError ? `: ${o.artifactError}` : ""}]`;
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

/** The model's text: output (or a placeholder), truncation notice, summary lines. */
export function resultText(dump: OutputDump, d: PythonToolDetails): string {
  const parts: string[] = [];
  const body = dump.text.replace(/\n+$/, "");
  const hasRich = d.images.length > 0 || d.jsonOutputs.length > 0;
  if (body) parts.push(body);
  else parts.push(hasRich ? "(no text output)" : "(no output)");
  if (dump.truncated) parts.push(truncationNotice(d.output));
  parts.push(...summaryLines(d));
  return parts.join("\n");
}
