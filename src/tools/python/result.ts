/**
 * The python tool's result: the details shape (for renderers and hosts) and the text the model
 * reads, in the original's wording (`[i/n] title`, `(ok)`, failed/aborted cell lines); the output
 * body with its per-cell cut notices comes from output-text.ts (docs/output.md).
 */

import type { StatusEvent } from "../../kernel/types.js";
import { shownRanges } from "../../output/select.js";
import type { ArtifactIncomplete, CellDump, OutputDump } from "../../output/sink.js";
import type { SessionEvent } from "../../runtime/session.js";
import type { RetiredSession, SessionMode, StateLoss } from "../../runtime/sessions.js";
import { pluralBare } from "../../sys/units.js";
import {
  abortText,
  type CellAbort,
  cellList,
  eventText,
  evictedText,
  type KernelOwner,
  processLimitText,
  replacedText,
  type SessionStartFacts,
  sessionStartNotes,
  stateLossText,
} from "../kernel-text.js";
import { errorHeadline } from "../traceback-text.js";
import type { ImageDetails } from "./images.js";
import type { SessionExport } from "./session-notebook.js";

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
  /** Why it did not finish (status aborted). */
  abort?: CellAbort;
  timedOut?: boolean;
  stdinRequested?: boolean;
  /** The kernel went idle without replying to this cell (status error). */
  noReply?: boolean;
  /** After an interrupt the kernel stayed busy and was restarted (state lost). */
  restartedAfterInterrupt?: boolean;
  /** Starts of a process or thread refused at the kernel's process limit while this cell ran. */
  processLimit?: { maxProcesses: number; refused: number };
  /** What the session did to the kernel around this cell (restarts; docs/kernel-state.md). */
  kernelEvents?: SessionEvent[];
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

export interface PythonImageDetails extends ImageDetails {
  cell: number;
  originalBytes: number;
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
  /** The artifact holds only the start of the output: its bytes and lines, and why the rest is lost. */
  artifactIncomplete?: ArtifactIncomplete;
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
  /** Whose kernel ran the cells (for wording): a python session or a notebook's kernel. */
  kernelOwner?: KernelOwner;
  /** This call started the kernel (no state from earlier calls). */
  kernelStarted?: boolean;
  /** The kept kernel this session had before was shut down while unused (sweep, eviction). */
  replaced?: RetiredSession;
  /**
   * The kernel's state was lost since the last result on this session (an earlier call's restart or
   * death, a restart on request): said at the top, once (docs/kernel-state.md).
   */
  stateLoss?: StateLoss;
  /** The kept kernel shut down to make room for this call's (its state gone). */
  evicted?: RetiredSession;
  /** Set on the session's first call: what the model is told once per session (withheld env). */
  sessionStart?: SessionStartFacts;
  /** Extra lines for the top of the text (e.g. a kernelspec that was replaced). */
  notes?: string[];
  /** export_notebook: what was written (docs/python-tool.md, "The session as a notebook"). */
  exported?: SessionExport;
}

/** Details before anything ran (also what an Error: result carries). */
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
    artifactIncomplete: dump.artifactIncomplete,
  };
}

export function cellOutputDetails(cell: CellDump, dump: OutputDump): PythonCellOutputDetails {
  const out: PythonCellOutputDetails = {
    lines: cell.lines,
    bytes: cell.bytes,
    truncated: cell.cut,
    shownLines: shownRanges(cell.shown),
    linesCut: cell.shown.filter((l) => l.cutChars > 0).length,
    clears: cell.clears,
  };
  if (cell.cut && dump.artifactId) {
    out.artifactId = dump.artifactId;
    out.artifactLines = [
      cell.firstArtifactLine,
      cell.firstArtifactLine + cell.lines + cell.artifactExtra - 1,
    ];
  }
  return out;
}

export function cellHeader(i: number, n: number, title?: string): string {
  return `[${i}/${n}]${title ? ` ${title}` : ""}`;
}

/** The cell's code was sent to the kernel (it ran, fully or in part). */
export function cellRan(c: PythonCellDetails): boolean {
  if (c.status === "ok" || c.status === "error") return true;
  if (c.status !== "aborted" || !c.abort) return false;
  const k = c.abort.kind;
  return ((k === "timeout" || k === "cancelled") && !c.abort.beforeStart) || k === "kernel-died";
}

function label(c: PythonCellDetails): string {
  return `cell ${c.index}`;
}

/**
 * The closing lines: kernel events, the failed or aborted cell with what ran before it and what was
 * left unrun, images not included. Every sentence follows from the recorded statuses and events.
 */
export function summaryLines(d: PythonToolDetails): string[] {
  const lines: string[] = [];
  const owner = d.kernelOwner ?? "session";
  /** Cells whose state lives in the kernel now (reset by a restart). */
  let alive: number[] = [];
  let stopped = false;
  for (const c of d.cells) {
    for (const e of c.kernelEvents ?? []) {
      lines.push(eventText(e, label(c), owner));
      alive = [];
    }
    if (c.processLimit) lines.push(processLimitText(c.index, c.processLimit));
    if (c.status === "ok") alive.push(c.index);
    else if (c.status === "error" && c.allowedError) {
      const what = c.error ? errorHeadline(c.error.name, c.error.value) : "an error";
      lines.push(`Cell ${c.index} raised ${what} (allowed; the run went on).`);
      alive.push(c.index);
    } else if (c.status === "error" || c.status === "aborted") {
      stopped = true;
      const Label = `Cell ${c.index}`;
      if (c.status === "error" && c.noReply) {
        lines.push(
          `${Label} failed: the kernel went idle without replying to it (its request handler failed; the kernel's log says why). The output above is all it produced; the kernel keeps its state.`,
        );
      } else if (c.status === "error") {
        // An exception without a message (EOFError, StopIteration) is named alone: "failed: EOFError."
        // IRkernel's evalue ends with a newline and repeats its name: "failed: Error in eval(…)."
        const what = c.error ? errorHeadline(c.error.name, c.error.value) : "";
        lines.push(`${Label} failed${what ? `: ${what}` : ""}.`);
      }
      const diedInCell = c.kernelEvents?.some((e) => e.kind === "died-during-code") === true;
      if (c.status === "aborted" && c.abort && !(c.abort.kind === "kernel-died" && c.kernelEvents?.length)) {
        lines.push(abortText(c.abort, label(c), c.restartedAfterInterrupt === true, diedInCell));
      }
      const died = diedInCell || c.restartedAfterInterrupt;
      if (!died && alive.length > 0) {
        lines.push(
          `${cap(cellList(alive))} ran in this call; ${alive.length === 1 ? "its" : "their"} state persists, so only cell ${c.index} onward needs to run again.`,
        );
      }
      break;
    }
  }
  if (stopped) {
    const unrun = d.cells.filter((c) => c.status === "skipped").map((c) => c.index);
    if (unrun.length) lines.push(`${cap(cellList(unrun))} did not run.`);
  }
  // an image left out is named at its place by its label (docs/output.md), not again here
  return lines;
}

function cap(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}

/** Notes for the top of the text: the kernel was replaced or just started, other notices. */
export function leadingNotes(d: PythonToolDetails): string[] {
  const notes: string[] = [];
  if (d.replaced) notes.push(replacedText(d.replaced, d.kernelOwner ?? "session"));
  if (d.stateLoss) notes.push(stateLossText(d.stateLoss, d.kernelOwner ?? "session"));
  if (d.evicted) notes.push(evictedText(d.evicted));
  if (d.sessionStart) notes.push(...sessionStartNotes(d.sessionStart, d.kernelOwner ?? "session"));
  notes.push(...(d.notes ?? []));
  return notes;
}

/** The model's text: notes, output body with its cut notices (or a placeholder), dropped images, summary lines. */
export function resultText(body: string, d: PythonToolDetails): string {
  const parts: string[] = [...leadingNotes(d)];
  const hasRich = d.images.length > 0 || d.jsonOutputs.length > 0 || (d.droppedImages ?? 0) > 0;
  // A kernel that died says so below; "(no output)" above that would only be noise.
  const died = d.cells.some((c) => c.abort?.kind === "kernel-died");
  if (body) parts.push(body);
  else if (!died) parts.push(hasRich ? "(no text output)" : "(no output)");
  if (d.droppedImages) parts.push(droppedImagesNotice(d));
  parts.push(...summaryLines(d));
  return parts.join("\n");
}

function droppedImagesNotice(d: PythonToolDetails): string {
  const n = d.droppedImages ?? 0;
  const kept = d.images.length;
  return `[${pluralBare(n, "earlier image")} not included (limit: ${pluralBare(kept, "image")} per call; the latest are kept)]`;
}
