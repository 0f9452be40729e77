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
import type { ImageBudget } from "../output/model-budgets.js";
import { sanitise } from "../output/sanitise.js";
import { MAX_DISPLAY_SLOTS, type OutputDump, OutputSink } from "../output/sink.js";
import { CallAbortedError, CallTimeoutError, type Deadline } from "../runtime/deadline.js";
import { SlotWaitTimeoutError } from "../runtime/errors.js";
import { QueueWaitTimeoutError } from "../runtime/queue.js";
import {
  InitScriptError,
  SessionClosedError,
  type SessionExecuteResult,
  TooManyRestartsError,
} from "../runtime/session.js";
import type { QueueHolder } from "../runtime/sessions.js";
import { thousands } from "../sys/thousands.js";
import { LatestImages } from "./cell-images.js";
import { describeFailure } from "./failure-text.js";
import { type CellAbort, inlineNotice, stdinTracebackText } from "./kernel-text.js";
import { displayModelText, type OutputTextCell, outputText } from "./output-text.js";
import {
  cellHeader,
  cellOutputDetails,
  outputDetails,
  type PythonToolDetails,
  resultText,
} from "./python/result.js";
import { queueHolderFacts } from "./queue-holder.js";
import { foldTraceback } from "./traceback-text.js";
import type { ToolResult, ToolUpdate } from "./types.js";

/** The line before a display an earlier call showed, first seen in this call through an update. */
/** What a look at a running cell showed: its lines, clears and in-place display edits then. */
export interface SeenView {
  lines: number;
  clears: number;
  edits?: number;
}

export const EARLIER_CALL_DISPLAY = "[update of a display shown by an earlier call]";
/** The same when this call showed more displays with ids than it keeps places for (docs/output.md). */
export const UNPLACED_DISPLAY = `[update of an earlier display whose place is not kept (over ${thousands(MAX_DISPLAY_SLOTS)} displays with ids)]`;

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
  /**
   * What the label of an image left out by the image limit adds: where it is kept and the call that
   * returns it (`cell`: as the text names it). Without it (a python call), the label says how to see it.
   */
  imageLeftOut?: (cell: number) => string;
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
  /** Display ids an update showed as new (it could not be placed), with the line said above it. */
  private readonly shownAsNew = new Map<string, string>();
  private lastUpdate = 0;
  private cellStarted = 0;
  private readonly startedAt = Date.now();
  private onUpdate?: ToolUpdate<PythonToolDetails>;
  /** A held-back progress update waiting for the interval to end. */
  private trailing?: NodeJS.Timeout;
  private finished = false;
  /** What looks at the run while it went on showed (docs/runs.md): the final text starts after it. */
  private shown?: { from: number; seen?: SeenView };
  /** While the call waits for its session's queue: who holds the kernel (docs/runs.md). */
  waitingFor?: () => QueueHolder | undefined;

  constructor(private readonly options: CellRunRecorderOptions) {
    this.details = options.details;
    this.onUpdate = options.onUpdate;
    this.images = new LatestImages(
      options.images.maxImages,
      options.imageLeftOut ?? (() => "run it again in a call that shows fewer images to see it"),
    );
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
        else if (kind === "error" && this.pushFolded(text)) {
          this.update();
          return;
        }
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
        const isUpdate = display.source === "update_display_data";
        if (!isUpdate) this.beforeOutput(i);
        if (display.type === "json")
          this.details.jsonOutputs.push({ cell: i, data: display.data["application/json"] });
        const id = display.displayId;
        const name = this.details.cells[i - 1].index;
        const add = (mimeType: string, payload: unknown) => this.images.add(i, name, mimeType, payload, id);
        let image: string | undefined;
        if (display.type === "image") {
          const mime = display.mimeType ?? "image/png";
          // an image shown before under this id keeps its place among the images (docs/output.md)
          image =
            (id !== undefined ? this.images.replace(id, mime, display.data[mime]) : undefined) ??
            add(mime, display.data[mime]);
        } else if (id !== undefined) this.images.forget(id);
        let text = displayModelText(display, { image, embedded: add });
        if (id !== undefined) {
          // Jupyter shows every output with this id as this one (docs/output.md)
          const prefix = this.shownAsNew.get(id);
          const found = this.sink.updateDisplay(id, prefix ? `${prefix}\n${text}` : text);
          // a display cleared since shows nothing, its images included
          if (isUpdate && found === "gone") this.images.forget(id);
          if (isUpdate && (found === "replaced" || found === "gone")) {
            this.update();
            return;
          }
          if (isUpdate) {
            // a display this call cannot place: new here, and said so; its later updates replace it
            const said = found === "untracked" ? UNPLACED_DISPLAY : EARLIER_CALL_DISPLAY;
            this.shownAsNew.set(id, said);
            if (this.shownAsNew.size > MAX_DISPLAY_SLOTS)
              this.shownAsNew.delete(this.shownAsNew.keys().next().value!);
            text = `${said}\n${text}`;
          }
        }
        this.sink.push(text, "display", id);
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

  /**
   * A traceback with library frames to fold: the view shows it folded, the artifact keeps it whole
   * (docs/output.md, "Tracebacks"). False when there is nothing to fold or no artifact to point to.
   */
  private pushFolded(text: string): boolean {
    const clean = sanitise(text);
    const folded = foldTraceback(clean);
    if (!folded) return false;
    return this.sink.pushAside(
      clean,
      ({ id, first, last }) => folded.text(`artifact://${id}, lines ${thousands(first)}-${thousands(last)}`),
      "error",
    );
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
      const stuck = r.notices.find((x) => x.kind === "kernel-unresponsive");
      d.abort = {
        kind: "timeout",
        seconds: deadline.seconds,
        ...(stuck ? { unresponsive: { silentMs: stuck.silentMs } } : {}),
      };
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
    seen?: SeenView,
  ): {
    text: string;
    details: PythonToolDetails;
    from: number;
    current: number;
    /** What the running cell's view holds now (for the next look's `seen`). */
    currentView?: { lines: number; clears: number; edits: number };
  } {
    const dump = this.sink.dump();
    const { k, names } = this.view(dump, from, seen);
    const text = this.images.label(outputText({ ...dump, cells: dump.cells.slice(k) }, names.slice(k)));
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
      currentView: runningView
        ? { lines: runningView.lines, clears: runningView.clears, edits: runningView.edits }
        : undefined,
    };
  }

  /**
   * A look at the run still going showed the cells before position `from` and, of the cell at
   * `from`, what `seen` counts: the final result's text shows only what came after (docs/runs.md).
   */
  markShown(from: number, seen?: SeenView): void {
    this.shown = { from, seen };
  }

  /**
   * The cells' names from position `from` on, the first starting after the lines `seen` counts
   * (unless it was cleared since): `k` is its place among the started cells.
   */
  private view(dump: OutputDump, from: number, seen?: SeenView) {
    const k = Math.max(0, this.started.indexOf(from));
    const n = this.details.cells.length;
    const names = this.started.map((i) => {
      const d = this.details.cells[i - 1];
      return { name: `cell ${d.index}`, okWhenEmpty: n > 1 && d.status === "ok" } as OutputTextCell;
    });
    // The cell that was running at the last look: only what came since (unless it was cleared).
    const firstCell = dump.cells[k];
    if (seen && firstCell && names[k] && firstCell.clears === seen.clears && seen.lines > 0) {
      // a display replaced in place since (update_display_data) is shown again from its first line
      const edited = firstCell.editedLines.find(([edit]) => edit > (seen.edits ?? 0))?.[1];
      const startAt = Math.min(seen.lines + 1, edited ?? Number.POSITIVE_INFINITY);
      if (startAt > 1) names[k].startAt = startAt;
    }
    return { k, names };
  }

  /** The output text after what earlier looks at the run showed, when there were any (docs/runs.md). */
  private afterShown(dump: OutputDump): string {
    if (!this.shown) return this.body(dump);
    const { k, names } = this.view(dump, this.shown.from, this.shown.seen);
    const index = (j: number) => this.details.cells[this.started[j] - 1]?.index;
    const before =
      k === 0
        ? []
        : [`… [${k === 1 ? `cell ${index(0)}` : `cells ${index(0)}-${index(k - 1)}`} shown before]`];
    const rest = this.images.label(outputText({ ...dump, cells: dump.cells.slice(k) }, names.slice(k)));
    return [...before, ...(rest ? [rest] : [])].join("\n");
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

  /**
   * The output text: cells named by their index (`cell ${index}`), as the rest of the text does;
   * images labelled at their place.
   */
  private body(dump: OutputDump): string {
    const n = this.details.cells.length;
    const text = outputText(
      dump,
      this.started.map((i) => {
        const d = this.details.cells[i - 1];
        return { name: `cell ${d.index}`, okWhenEmpty: n > 1 && d.status === "ok" };
      }),
    );
    return this.images.label(text);
  }

  /** The result's output text: every sent image tied to its cell, also when its place was cut. */
  private finalBody(dump: OutputDump): string {
    const body = this.afterShown(dump);
    return [body, ...this.images.unplaced(body)].filter(Boolean).join("\n");
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
      content: [{ type: "text", text: resultText(this.finalBody(dump), details) }, ...content],
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
