/**
 * Records a sequence of cell executions for the model: one OutputSink (each cell's output bounded
 * within a shared budget, the whole call's text in one artifact), per-cell status, JSON outputs,
 * status events, images (the latest ones); clear_output followed as Jupyter does; throttled progress
 * through onUpdate; and the final result (text in the original's wording, images downscaled to the
 * budget). Shared by the python tool and the notebook tool's run action, so both answer alike.
 * The rules are in docs/output.md.
 */
import type { ExecuteOptions } from "../kernel/types.js";
import type { ArtifactStore } from "../output/artifacts.js";
import { type OutputDump, OutputSink } from "../output/sink.js";
import { CallAbortedError, CallTimeoutError, type Deadline } from "../runtime/deadline.js";
import {
  InitScriptError,
  SessionClosedError,
  type SessionExecuteResult,
  TooManyRestartsError,
} from "../runtime/session.js";
import { QueueWaitTimeoutError, SlotWaitTimeoutError } from "../runtime/sessions.js";
import { LatestImages } from "./cell-images.js";
import { describeFailure } from "./failure-text.js";
import { type CellAbort, inlineNotice, stdinTracebackText } from "./kernel-text.js";
import { displayModelText, type OutputTextCell, outputText } from "./output-text.js";
import type { ImageBudget } from "./python-images.js";
import {
  cellHeader,
  cellOutputDetails,
  outputDetails,
  type PythonToolDetails,
  resultText,
} from "./python-result.js";
import { queueHolderFacts } from "./queue-holder.js";
import type { ToolResult, ToolUpdate } from "./types.js";

/** The ExecuteOptions hooks a recorder fills for one cell. */
export type CellHooks = Pick<
  ExecuteOptions,
  "onChunk" | "onDisplay" | "onStatusEvent" | "onClearOutput" | "onNotice" | "keepText"
>;

export interface CellRunRecorderOptions {
  artifacts: ArtifactStore;
  session: string;
  maxBytes: number;
  images: Required<ImageBudget>;
  updateIntervalMs: number;
  onUpdate?: ToolUpdate<PythonToolDetails>;
  /** The details object to fill (cells pre-listed as pending). */
  details: PythonToolDetails;
}

type ExecResult = Pick<
  SessionExecuteResult,
  | "status"
  | "executionCount"
  | "cancelled"
  | "timedOut"
  | "stdinRequested"
  | "kernelRestarted"
  | "error"
  | "notices"
  | "kernelDied"
> &
  Partial<Pick<SessionExecuteResult, "events">>;

export class CellRunRecorder {
  readonly sink: OutputSink;
  readonly details: PythonToolDetails;
  private readonly images: LatestImages;
  /** Positions (1-based, in details.cells) of the cells started, in order: the sink's cells. */
  private readonly started: number[] = [];
  /** Cells whose clear_output(wait=True) waits for their next output. */
  private readonly clearOnNextOutput = new Set<number>();
  /** Cells whose input() was refused (no interactive stdin): their EOFError is told in one line. */
  private readonly stdinRefused = new Set<number>();
  private lastUpdate = 0;
  private cellStarted = 0;
  private readonly startedAt = Date.now();
  private onUpdate?: ToolUpdate<PythonToolDetails>;
  /** A held-back progress update waiting for the interval to end. */
  private trailing?: NodeJS.Timeout;
  private finished = false;

  constructor(private readonly options: CellRunRecorderOptions) {
    this.details = options.details;
    this.onUpdate = options.onUpdate;
    this.images = new LatestImages(options.images.maxImages);
    this.sink = new OutputSink({
      maxBytes: options.maxBytes,
      artifact: options.artifacts.create(options.session),
    });
  }

  /** Cell `i` (1-based) starts; `label` overrides the `[i/n] title` header. */
  startCell(i: number, label?: string): void {
    const n = this.details.cells.length;
    const d = this.details.cells[i - 1];
    d.status = "running";
    this.sink.startCell(n > 1 || label ? (label ?? cellHeader(i, n, d.title)) : undefined);
    this.started.push(i);
    this.cellStarted = Date.now();
    this.update(true);
  }

  /** Hooks that stream cell `i`'s output into the sink and details. */
  hooks(i: number): CellHooks {
    return {
      keepText: false,
      onChunk: (text, kind) => {
        this.beforeOutput(i);
        // Only the model's text is shortened; saved notebook outputs keep what the kernel sent.
        if (kind === "error" && this.stdinRefused.has(i)) text = stdinTracebackText(text) ?? text;
        this.sink.push(text, kind);
        this.update();
      },
      onNotice: (notice) => {
        if (notice.kind === "stdin-refused") this.stdinRefused.add(i);
        const text = inlineNotice(notice);
        if (!text) return; // the summary lines say it
        this.sink.push(`${text}\n`, "notice");
        this.update();
      },
      onDisplay: (display) => {
        // an update changes an earlier output in place: not a new output (nbclient)
        if (display.source !== "update_display_data") this.beforeOutput(i);
        if (display.type === "image") this.images.add(i, display);
        if (display.type === "json")
          this.details.jsonOutputs.push({ cell: i, data: display.data["application/json"] });
        const text = displayModelText(display);
        if (text) this.sink.push(text, "display");
        this.update();
      },
      onClearOutput: (wait) => {
        if (wait) this.clearOnNextOutput.add(i);
        else this.clear(i);
      },
      onStatusEvent: (event) => {
        this.details.statusEvents.push({ ...event, cell: i });
        this.update();
      },
    };
  }

  /** nbclient's rule: clear_output(wait=True) takes effect when the cell's next output arrives. */
  private beforeOutput(i: number): void {
    if (this.clearOnNextOutput.has(i)) this.clear(i);
  }

  /** What cell `i` showed leaves the model's view (text, images, JSON), as it leaves the notebook. */
  private clear(i: number): void {
    this.clearOnNextOutput.delete(i);
    if (this.started[this.started.length - 1] === i) this.sink.clear();
    this.images.clear(i);
    const json = this.details.jsonOutputs;
    for (let k = json.length - 1; k >= 0; k--) if (json[k].cell === i) json.splice(k, 1);
    this.update();
  }

  /** Records cell `i`'s result; returns false when the run should stop (error or abort). */
  finishCell(
    i: number,
    r: ExecResult,
    deadline: Deadline,
    allowError = false,
    signal?: AbortSignal,
  ): boolean {
    const d = this.details.cells[i - 1];
    d.durationMs = Date.now() - this.cellStarted;
    d.executionCount = r.executionCount;
    d.stdinRequested = r.stdinRequested || undefined;
    d.kernelEvents = r.events?.length ? r.events : undefined;
    d.restartedAfterInterrupt = r.kernelRestarted || undefined;
    d.noReply = r.notices.some((x) => x.kind === "no-reply") || undefined;
    const limited = r.notices.find((x) => x.kind === "process-limit-reached");
    if (limited) d.processLimit = { maxProcesses: limited.maxProcesses, refused: limited.refused };
    if (r.timedOut) {
      d.status = "aborted";
      d.timedOut = true;
      d.abort = { kind: "timeout", seconds: deadline.seconds };
    } else if (r.cancelled || r.status === "aborted" || r.kernelDied) {
      d.status = "aborted";
      const died = r.notices.find((x) => x.kind === "kernel-died" || x.kind === "kernel-not-running");
      d.abort = r.kernelDied
        ? {
            kind: "kernel-died",
            reason: died && "reason" in died ? died.reason : "unknown",
            ...(died?.kind === "kernel-died" && died.limit ? { limit: died.limit } : {}),
            ...(died?.cause ? { cause: died.cause } : {}),
          }
        : cancelled(signal?.aborted ? new CallAbortedError(signal.reason) : undefined, false);
    } else if (r.status === "error") {
      d.status = "error";
      if (r.error) d.error = { name: r.error.name, value: r.error.value };
      if (allowError) d.allowedError = true;
    } else {
      d.status = "ok";
    }
    this.sink.endCell();
    this.update(true);
    return d.status === "ok" || (d.status === "error" && allowError);
  }

  /**
   * A failure outside an execution (deadline, abort, restarts exhausted, session closed, kernel
   * start). Returns the error to report as the whole call's failure when no cell had started.
   */
  fail(err: unknown, current: number): unknown {
    const started = current > 0 && this.details.cells[current - 1]?.status === "running";
    const cell = this.details.cells[Math.max(0, current - 1)];
    let abort: CellAbort | undefined;
    if (err instanceof SlotWaitTimeoutError)
      abort = {
        kind: "timeout",
        seconds: err.seconds,
        beforeStart: true,
        slot: { maxSessions: err.maxSessions, holders: err.holders },
      };
    else if (err instanceof QueueWaitTimeoutError) {
      const holder = queueHolderFacts(err.holder, err.ahead);
      abort = { kind: "timeout", seconds: err.seconds, beforeStart: true, queue: holder ? { holder } : {} };
    } else if (err instanceof CallTimeoutError)
      abort = { kind: "timeout", seconds: err.seconds, beforeStart: !started };
    else if (err instanceof CallAbortedError) abort = cancelled(err, !started);
    else if (err instanceof TooManyRestartsError) abort = { kind: "restarts-exhausted" };
    else if (err instanceof SessionClosedError) abort = { kind: "session-closed" };
    else if (current === 0) return err;
    else if (err instanceof InitScriptError)
      abort = { kind: "failed", message: `the restarted kernel's init script failed (${err.why})` };
    else abort = { kind: "failed", message: describeFailure(err) };
    if (!cell) return err;
    cell.status = "aborted";
    cell.abort = abort;
    cell.timedOut = abort.kind === "timeout" || undefined;
    return undefined;
  }

  /** Progress goes to another listener (or none): a run followed by another call (docs/runs.md). */
  setOnUpdate(onUpdate: ToolUpdate<PythonToolDetails> | undefined): void {
    this.onUpdate = onUpdate;
  }

  /**
   * The view so far of the cells from position `from` on (1-based), without ending anything: for a
   * run that is still going. `current` is the position of the cell running now (0: none yet).
   */
  snapshot(
    from = 1,
    seen?: { lines: number; clears: number },
  ): {
    text: string;
    details: PythonToolDetails;
    from: number;
    current: number;
    /** What the running cell's view holds now (for the next look's `seen`). */
    currentView?: { lines: number; clears: number };
  } {
    const dump = this.sink.dump();
    const k = Math.max(0, this.started.indexOf(from));
    const n = this.details.cells.length;
    const names = this.started.map((i) => {
      const d = this.details.cells[i - 1];
      return { name: `cell ${d.index}`, okWhenEmpty: n > 1 && d.status === "ok" } as OutputTextCell;
    });
    // The cell that was running at the last look: only what came since (unless it was cleared).
    const firstCell = dump.cells[k];
    if (seen && firstCell && names[k] && firstCell.clears === seen.clears && seen.lines > 0) {
      names[k].startAt = seen.lines + 1;
    }
    const text = outputText({ ...dump, cells: dump.cells.slice(k) }, names.slice(k));
    const running = this.details.cells.findIndex((c) => c.status === "running");
    const runningView = dump.cells[this.started.indexOf(running + 1)];
    return {
      text,
      details: {
        ...this.details,
        cells: this.withOutput(dump),
        output: outputDetails(dump, this.options.maxBytes),
      },
      from: this.started[k] ?? from,
      current: running + 1,
      currentView: runningView ? { lines: runningView.lines, clears: runningView.clears } : undefined,
    };
  }

  /**
   * Progress to the listener, at most one per updateIntervalMs; an update held back by that limit is
   * sent when the interval ends (so the last line before a quiet stretch is not lost).
   */
  update(force = false): void {
    const onUpdate = this.onUpdate;
    if (!onUpdate || this.finished) return;
    const now = Date.now();
    const wait = this.options.updateIntervalMs - (now - this.lastUpdate);
    if (!force && wait > 0) {
      this.trailing ??= setTimeout(() => {
        this.trailing = undefined;
        this.update(true);
      }, wait);
      return;
    }
    clearTimeout(this.trailing);
    this.trailing = undefined;
    this.lastUpdate = now;
    const dump = this.sink.dump();
    onUpdate({
      content: [{ type: "text", text: this.body(dump) }],
      details: {
        ...this.details,
        cells: this.withOutput(dump).map((c) => ({ ...c })),
        output: outputDetails(dump, this.options.maxBytes),
      },
    });
  }

  /** The output text: cells named by their index (`cell ${index}`), as the rest of the text does. */
  private body(dump: OutputDump): string {
    const n = this.details.cells.length;
    return outputText(
      dump,
      this.started.map((i) => {
        const d = this.details.cells[i - 1];
        return { name: `cell ${d.index}`, okWhenEmpty: n > 1 && d.status === "ok" };
      }),
    );
  }

  private withOutput(dump: OutputDump) {
    const cells = this.details.cells.map((c) => ({ ...c }));
    for (const [k, cell] of dump.cells.entries()) {
      const i = this.started[k];
      if (i) cells[i - 1].output = cellOutputDetails(cell, dump);
    }
    return cells;
  }

  /** Ends the sink and builds the model's result (images prepared within the budget). */
  async result(): Promise<ToolResult<PythonToolDetails>> {
    this.finished = true;
    clearTimeout(this.trailing);
    this.trailing = undefined;
    const details = this.details;
    for (const c of details.cells) if (c.status === "pending" || c.status === "running") c.status = "skipped";
    const dump = this.sink.end();
    details.output = outputDetails(dump, this.options.maxBytes);
    for (const [k, cell] of dump.cells.entries()) {
      const i = this.started[k];
      if (i) details.cells[i - 1].output = cellOutputDetails(cell, dump);
    }
    const content = await this.images.prepare(this.options.images, details);
    details.durationMs = Date.now() - this.startedAt;
    const failed = details.cells.some((c) => c.status === "error" || c.status === "aborted");
    const result: ToolResult<PythonToolDetails> = {
      content: [{ type: "text", text: resultText(this.body(dump), details) }, ...content],
      details,
    };
    if (failed) result.isError = true;
    return result;
  }
}

/** A cancelled cell's abort, with why when the caller's signal said (docs/kernel-state.md). */
function cancelled(err: CallAbortedError | undefined, beforeStart: boolean): CellAbort {
  return {
    kind: "cancelled",
    ...(err ? { reason: err.message } : {}),
    ...(beforeStart ? { beforeStart } : {}),
    ...(err?.hostExiting ? { hostExiting: true } : {}),
  };
}
