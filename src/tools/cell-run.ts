/**
 * Records a sequence of cell executions for the model: one OutputSink (bounded, full text spilled to
 * an artifact), per-cell status, JSON outputs, status events, images; throttled progress through
 * onUpdate; and the final result (text in the original's wording, images downscaled to the budget).
 * Shared by the python tool and the notebook tool's run action, so both answer alike.
 */
import type { DisplayOutput, ExecuteOptions } from "../kernel/types.js";
import type { ArtifactStore } from "../output/artifacts.js";
import { OutputSink } from "../output/sink.js";
import { CallAbortedError, CallTimeoutError, type Deadline } from "../runtime/deadline.js";
import {
  InitScriptError,
  SessionClosedError,
  type SessionExecuteResult,
  TooManyRestartsError,
} from "../runtime/session.js";
import { type CellAbort, inlineNotice } from "./kernel-text.js";
import { type ImageBudget, prepareImage } from "./python-images.js";
import { cellHeader, outputDetails, type PythonToolDetails, resultText } from "./python-result.js";
import type { ImageContent, ToolResult, ToolUpdate } from "./types.js";

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
  private readonly rawImages: { cell: number; display: DisplayOutput }[] = [];
  private lastUpdate = 0;
  private produced = false;
  /** The last text pushed ended a line (so a notice starts on its own line). */
  private lineStart = true;
  private cellStarted = 0;
  private readonly started = Date.now();

  constructor(private readonly options: CellRunRecorderOptions) {
    this.details = options.details;
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
    if (n > 1 || label) this.sink.push(`${label ?? cellHeader(i, n, d.title)}\n`);
    this.produced = false;
    this.cellStarted = Date.now();
    this.update(true);
  }

  /** Hooks that stream cell `i`'s output into the sink and details. */
  hooks(
    i: number,
  ): Pick<ExecuteOptions, "onChunk" | "onDisplay" | "onStatusEvent" | "onNotice" | "keepText"> {
    return {
      onNotice: (notice) => {
        const text = inlineNotice(notice);
        if (!text) return; // the summary lines say it
        this.produced = true;
        this.sink.push(`${this.lineStart ? "" : "\n"}${text}\n`);
        this.lineStart = true;
        this.update();
      },
      keepText: false,
      onChunk: (text) => {
        this.produced = true;
        this.lineStart = text.endsWith("\n");
        this.sink.push(text);
        this.update();
      },
      onDisplay: (display) => {
        this.produced = true;
        if (display.type === "image") this.rawImages.push({ cell: i, display });
        if (display.type === "json")
          this.details.jsonOutputs.push({ cell: i, data: display.data["application/json"] });
        if (display.text) this.sink.push(display.text.endsWith("\n") ? display.text : `${display.text}\n`);
        this.update();
      },
      onStatusEvent: (event) => {
        this.details.statusEvents.push({ ...event, cell: i });
        this.update();
      },
    };
  }

  /** Records cell `i`'s result; returns false when the run should stop (error or abort). */
  finishCell(i: number, r: ExecResult, deadline: Deadline, allowError = false): boolean {
    const n = this.details.cells.length;
    const d = this.details.cells[i - 1];
    d.durationMs = Date.now() - this.cellStarted;
    d.executionCount = r.executionCount;
    d.stdinRequested = r.stdinRequested || undefined;
    d.kernelEvents = r.events?.length ? r.events : undefined;
    d.restartedAfterInterrupt = r.kernelRestarted || undefined;
    d.noReply = r.notices.some((x) => x.kind === "no-reply") || undefined;
    if (r.timedOut) {
      d.status = "aborted";
      d.timedOut = true;
      d.abort = { kind: "timeout", seconds: deadline.seconds };
    } else if (r.cancelled || r.status === "aborted" || r.kernelDied) {
      d.status = "aborted";
      const died = r.notices.find((x) => x.kind === "kernel-died" || x.kind === "kernel-not-running");
      d.abort = r.kernelDied
        ? { kind: "kernel-died", reason: died && "reason" in died ? died.reason : "unknown" }
        : { kind: "cancelled" };
    } else if (r.status === "error") {
      d.status = "error";
      if (r.error) d.error = { name: r.error.name, value: r.error.value };
      if (allowError) d.allowedError = true;
    } else {
      d.status = "ok";
      if (!this.produced && n > 1) this.sink.push("(ok)\n");
    }
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
    if (err instanceof CallTimeoutError)
      abort = { kind: "timeout", seconds: err.seconds, beforeStart: !started };
    else if (err instanceof CallAbortedError)
      abort = { kind: "cancelled", reason: err.message, beforeStart: !started };
    else if (err instanceof TooManyRestartsError) abort = { kind: "restarts-exhausted" };
    else if (err instanceof SessionClosedError) abort = { kind: "session-closed" };
    else if (current === 0) return err;
    else if (err instanceof InitScriptError)
      abort = { kind: "failed", message: `the restarted kernel's init script failed (${err.why})` };
    else abort = { kind: "failed", message: (err as Error).message.replace(/^Error:\s*/, "") };
    if (!cell) return err;
    cell.status = "aborted";
    cell.abort = abort;
    cell.timedOut = abort.kind === "timeout" || undefined;
    return undefined;
  }

  update(force = false): void {
    const onUpdate = this.options.onUpdate;
    if (!onUpdate) return;
    const now = Date.now();
    if (!force && now - this.lastUpdate < this.options.updateIntervalMs) return;
    this.lastUpdate = now;
    const dump = this.sink.dump();
    onUpdate({
      content: [{ type: "text", text: dump.text }],
      details: {
        ...this.details,
        cells: this.details.cells.map((c) => ({ ...c })),
        output: outputDetails(dump, this.options.maxBytes),
      },
    });
  }

  /** Ends the sink and builds the model's result (images prepared within the budget). */
  async result(): Promise<ToolResult<PythonToolDetails>> {
    const details = this.details;
    for (const c of details.cells) if (c.status === "pending" || c.status === "running") c.status = "skipped";
    const dump = this.sink.end();
    details.output = outputDetails(dump, this.options.maxBytes);
    const budget = this.options.images;
    const content: ImageContent[] = [];
    for (const { cell, display } of this.rawImages) {
      const mimeType = display.mimeType ?? "image/png";
      const base = { cell, mimeType };
      if (content.length >= budget.maxImages) {
        details.images.push({
          ...base,
          originalBytes: 0,
          included: false,
          reason: `limit of ${budget.maxImages} images per call`,
        });
        continue;
      }
      const img = await prepareImage(mimeType, display.data[mimeType], budget);
      details.images.push({
        ...base,
        width: img.width,
        height: img.height,
        originalBytes: img.originalBytes,
        included: img.data !== undefined,
        sentMimeType: img.mimeType,
        sentWidth: img.sentWidth,
        sentHeight: img.sentHeight,
        bytes: img.bytes,
        reason: img.error,
      });
      if (img.data && img.mimeType) content.push({ type: "image", data: img.data, mimeType: img.mimeType });
    }
    details.durationMs = Date.now() - this.started;
    const failed = details.cells.some((c) => c.status === "error" || c.status === "aborted");
    const result: ToolResult<PythonToolDetails> = {
      content: [{ type: "text", text: resultText(dump, details) }, ...content],
      details,
    };
    if (failed) result.isError = true;
    return result;
  }
}
