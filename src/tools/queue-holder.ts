/**
 * What a call that runs cells is, for the calls behind it in its session's queue, and what a call
 * whose result nobody reads leaves for the next one (docs/python-tool.md, "The session's queue";
 * docs/kernel-state.md). The runtime hands back the tag a holder gave (QueueHolder) and carries an
 * UnreadLoss to the next lease; this file turns them into the facts the texts are made from.
 */
import type { QueueHolder, SessionLease, UnreadLoss } from "../runtime/sessions.js";

/** What a tag reads of its call's record: the cells' states (a CellRunRecorder). */
export interface CellStates {
  readonly details: {
    readonly cells: readonly { status: string; index: number; restartedAfterInterrupt?: boolean }[];
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

/** Who held the kernel while a call waited for it in vain: what its text says. */
export interface QueueHolderFacts {
  /** The run the holder is (docs/runs.md): the runs tool follows or interrupts it by this id. */
  runId?: string;
  /** The holding call as its tool names it; undefined when it is not known. */
  what?: string;
  /** Seconds it has held the kernel. */
  heldSeconds: number;
  /** The holder's running cell (its label, "cell 2"), if one is running. */
  cell?: string;
  /** The holder has not started a cell yet (its kernel is starting). */
  starting?: boolean;
  /** Calls that were waiting ahead of this one. */
  ahead: number;
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
 * A call whose caller cancelled it (its own signal fired; the run's signal was aborted by it, not by
 * the runs tool) and whose kernel was restarted because its cell did not stop: nobody reads its
 * result, so the next call on the session says it (docs/kernel-state.md). Call within the lease.
 */
export function carryUnreadLoss(
  lease: SessionLease,
  tag: CellCallTag,
  callSignal: AbortSignal | undefined,
  runSignal: AbortSignal,
): void {
  if (!callSignal?.aborted || runSignal.reason !== callSignal.reason) return;
  const lost = tag.recorder.details.cells.find((c) => c.restartedAfterInterrupt);
  if (!lost) return;
  const loss: UnreadLoss = {
    why: "restarted-after-interrupt",
    at: Date.now(),
    call: tag.what,
    cell: `cell ${lost.index}`,
  };
  lease.carryUnreadLoss(loss);
}
