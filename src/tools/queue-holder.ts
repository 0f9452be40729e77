/**
 * What a call that runs cells is, for the calls behind it in its session's queue, and what a call
 * whose result nobody reads leaves for the next one (docs/python-tool.md, "The session's queue";
 * docs/kernel-state.md). The runtime hands back the tag a holder gave (QueueHolder) and carries a
 * StateLoss to the next lease; this file turns them into the facts the texts are made from.
 */
import type { SessionEvent } from "../runtime/session.js";
import type { QueueHolder, SessionLease, StateLoss } from "../runtime/sessions.js";
import type { CellAbort, QueueHolderFacts } from "./kernel-text.js";

/** What a tag reads of its call's record: the cells' states (a CellRunRecorder). */
export interface CellStates {
  readonly details: {
    readonly cells: readonly {
      status: string;
      index: number;
      restartedAfterInterrupt?: boolean;
      abort?: CellAbort;
      kernelEvents?: SessionEvent[];
    }[];
  };
}

/** What a tag asks its host's runs: the run a call's record belongs to (a RunRegistry). */
export interface RunLookup {
  holding(recorder: CellStates): { id: string } | undefined;
}

/** A call that runs cells (python call, notebook run), as the tag it takes its session's queue with. */
export class CellCallTag {
  constructor(
    /** As the call names itself: "python call", "run of a.ipynb". */
    readonly what: string,
    readonly recorder: CellStates,
    private readonly runs?: RunLookup,
  ) {}

  /** The run this call is (it is one while its runs registry follows it). */
  runId(): string | undefined {
    return this.runs?.holding(this.recorder)?.id;
  }
}

export function queueHolderFacts(
  holder: QueueHolder | undefined,
  ahead: number,
  now = Date.now(),
): QueueHolderFacts | undefined {
  if (!holder) return undefined;
  const facts: QueueHolderFacts = { heldSeconds: Math.round((now - holder.since) / 1000), ahead };
  if (!(holder.tag instanceof CellCallTag)) return facts;
  const tag = holder.tag;
  facts.what = tag.what;
  const runId = tag.runId();
  if (runId) facts.runId = runId;
  const cells = tag.recorder.details.cells;
  const running = cells.find((c) => c.status === "running");
  if (running) facts.cell = `cell ${running.index}`;
  else if (cells.every((c) => c.status === "pending")) facts.starting = true;
  return facts;
}

/**
 * The loss of the kernel's state this call caused, from its cells' record: a kernel restarted
 * because its cell did not stop when interrupted (by a timeout, the caller's cancel, or the runs or
 * kernels tool), or a kernel that died under a cell. Undefined when the state was kept, or the host
 * is exiting (no call comes after). `callSignal`: the call's own (its caller's cancel); `runSignal`:
 * the one the work ran under (aborted by that cancel, or by an interrupt of the run).
 */
export function stateLossOf(
  tag: CellCallTag,
  callSignal: AbortSignal | undefined,
  runSignal: AbortSignal,
  cellKey?: (index: number) => string | undefined,
  now = Date.now(),
): StateLoss | undefined {
  for (const c of tag.recorder.details.cells) {
    const base = { at: now, call: tag.what, cell: `cell ${c.index}` };
    const key = cellKey?.(c.index);
    const withKey = key ? { ...base, cellKey: key } : base;
    // A kernel that died before the cell's code started (restarted, the cell sent again) is told by
    // this call's result, the first after the loss, as one found dead at its start: the cells of
    // this call that ran after it hold the new kernel's state, so it is not a loss for the next call.
    const died = c.kernelEvents?.find((e) => e.kind === "died-during-code");
    if (died?.kind === "died-during-code") {
      const death = {
        reason: died.reason,
        ...(died.cause ? { cause: died.cause } : {}),
        restarted: died.restarted,
      };
      return { ...withKey, cause: "death", death };
    }
    if (!c.restartedAfterInterrupt) continue;
    const a = c.abort;
    if (a?.kind === "timeout") return { ...withKey, cause: "timeout", seconds: a.seconds };
    if (a?.kind === "cancelled" && a.hostExiting) return undefined;
    // The caller's own cancel aborted the run with its reason; anything else was an interrupt of the
    // run (the runs or kernels tool).
    const cancelled = callSignal?.aborted === true && runSignal.reason === callSignal.reason;
    const reason = a?.kind === "cancelled" && a.reason && a.reason !== "Aborted" ? a.reason : undefined;
    if (cancelled) return { ...withKey, cause: "cancel", ...(reason ? { reason } : {}) };
    const runId = tag.runId();
    return { ...withKey, cause: "interrupt", ...(runId ? { runId } : {}), ...(reason ? { reason } : {}) };
  }
  return undefined;
}

/**
 * Records the loss this call caused on its session (call within the lease), so the next result on
 * the session says it at its top, whether or not this call's own result is read
 * (docs/kernel-state.md).
 */
export function recordStateLoss(
  lease: SessionLease,
  tag: CellCallTag,
  callSignal: AbortSignal | undefined,
  runSignal: AbortSignal,
  cellKey?: (index: number) => string | undefined,
): void {
  const loss = stateLossOf(tag, callSignal, runSignal, cellKey);
  if (loss) lease.recordLoss(loss);
}
