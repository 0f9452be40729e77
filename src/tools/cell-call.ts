/**
 * The skeleton of every call that runs cells for the model — the python tool's execute and the
 * notebook tool's run (docs/python-tool.md, docs/runs.md): a deadline from the call's timeout, a
 * recorder that turns the kernel's messages into the result, the tag the call holds its session's
 * queue with, the session's turn (the lease's facts written into the details), and the call run now
 * or followed in the background by the runs registry. Each tool keeps what is its own: the cells it
 * sends and the words of its result.
 */

import type { ImageBudget } from "../output/model-budgets.js";
import { Deadline } from "../runtime/deadline.js";
import type { Runtime } from "../runtime/runtime.js";
import type { SessionSpec } from "../runtime/session.js";
import type { SessionLease, SessionMode } from "../runtime/sessions.js";
import { CellRunRecorder } from "./cell-recorder.js";
import type { PythonToolDetails } from "./python/result.js";
import { CellCallTag } from "./queue-holder.js";
import type { RunRegistry } from "./runs/registry.js";
import type { ToolResult, ToolUpdate } from "./types.js";

/**
 * A call's deadline: its timeout in seconds, else none where a call still running after its wait
 * goes on in the background (docs/runs.md), else the tool's default.
 */
export function callDeadline(
  timeoutSeconds: number | undefined,
  background: boolean,
  fallback: number,
): Deadline {
  return new Deadline(timeoutSeconds ?? (background ? Number.POSITIVE_INFINITY : fallback));
}

export interface CellCallOptions<D extends PythonToolDetails> {
  runtime: Runtime;
  runs?: RunRegistry;
  /** As the call names itself to queue holders and the runs tool: "python call", "run of a.ipynb". */
  what: string;
  /** The tool session the call's artifacts are kept under. */
  session: string;
  deadline: Deadline;
  /** The details the result is built in (cells pre-listed as pending). */
  details: D;
  maxBytes: number;
  images: Required<ImageBudget>;
  updateIntervalMs: number;
  onUpdate?: ToolUpdate<D>;
  /** What the label of an image left out adds (CellRunRecorderOptions.imageLeftOut). */
  imageLeftOut?: (cell: number) => string;
}

export class CellCall<D extends PythonToolDetails> {
  readonly deadline: Deadline;
  readonly recorder: CellRunRecorder;
  readonly tag: CellCallTag;
  /** The running cell, 1-based (0 before the first): a failure is said against it. */
  private current = 0;

  constructor(private readonly options: CellCallOptions<D>) {
    this.deadline = options.deadline;
    this.recorder = new CellRunRecorder({
      artifacts: options.runtime.artifacts,
      session: options.session,
      maxBytes: options.maxBytes,
      images: options.images,
      updateIntervalMs: options.updateIntervalMs,
      onUpdate: options.onUpdate as ToolUpdate<PythonToolDetails> | undefined,
      details: options.details,
      ...(options.imageLeftOut ? { imageLeftOut: options.imageLeftOut } : {}),
    });
    this.tag = new CellCallTag(options.what, this.recorder, options.runs);
  }

  /** Cell `i` (1-based, as details.cells lists them) starts; `label` heads its output. */
  startCell(i: number, label?: string): void {
    this.current = i;
    this.recorder.startCell(i, label);
  }

  /**
   * The session's turn for `body`: queued behind the session's other calls within the deadline, the
   * kernel started or restarted as needed, and what that did (a replaced or evicted kernel, lost
   * state, the session's first start) written into the details before `body` runs. Returns what
   * kept the call from its cells or ended it — a start failure, a timeout in the queue, a death —
   * as the recorder words it (CellRunRecorder.fail), or as it came when `keep` says so; undefined
   * when it ran through.
   */
  async inSession(
    spec: SessionSpec,
    turn: { mode: SessionMode; reset?: boolean; signal: AbortSignal },
    body: (lease: SessionLease) => Promise<void>,
    keep?: (err: unknown) => boolean,
  ): Promise<unknown> {
    try {
      await this.options.runtime.withSession(
        spec,
        {
          mode: turn.mode,
          ...(turn.reset !== undefined ? { reset: turn.reset } : {}),
          deadline: this.deadline,
          signal: turn.signal,
          tag: this.tag,
          onQueue: (probe) => {
            this.recorder.waitingFor = probe;
          },
        },
        async (lease) => {
          leaseFacts(this.options.details, lease);
          await body(lease);
        },
      );
      return undefined;
    } catch (err) {
      return keep?.(err) ? err : this.recorder.fail(err, this.current);
    }
  }

  /** Runs `work` now, or, where the runs registry follows calls, waits `wait` seconds and goes on in the background. */
  start(
    work: (signal: AbortSignal) => Promise<ToolResult<D>>,
    follow: { wait?: number; signal?: AbortSignal; onUpdate?: ToolUpdate<unknown> },
  ): Promise<ToolResult<D>> {
    const runs = this.options.runs;
    if (!runs) return work(follow.signal ?? new AbortController().signal);
    return runs.start(this.options.what, this.recorder, work, {
      waitSeconds: follow.wait,
      deadline: this.deadline,
      signal: follow.signal,
      onUpdate: follow.onUpdate,
    }) as Promise<ToolResult<D>>;
  }
}

/** What the session's turn did before the cells, into the details the result is worded from. */
function leaseFacts(details: PythonToolDetails, lease: SessionLease): void {
  details.replaced = lease.replaced;
  if (lease.stateLoss) details.stateLoss = lease.stateLoss;
  if (lease.evicted) details.evicted = lease.evicted;
  details.kernelStarted = lease.kernelStarted;
  if (lease.firstLease)
    details.sessionStart = {
      withheldEnv: [...lease.withheldEnv],
      ...(lease.cwdMissing && { cwdMissing: lease.cwdMissing }),
    };
}
