/**
 * Runs that outlive a tool call (docs/runs.md). A python call or notebook run still going when its
 * wait budget passes returns what it has so far with a run id; the work goes on in the background
 * (a notebook run keeps saving each cell) and the `runs` tool waits for more, returns the result
 * once done, or interrupts it. Run ids live as long as the toolbox; a finished run's result is kept
 * for KEEP_FINISHED_MS (and at most MAX_FINISHED of them). A registry made without a background
 * (a one-shot command: nothing outlives the call) waits for every call to its end instead.
 */
import type { Deadline } from "../../runtime/deadline.js";
import type { EventBus } from "../../runtime/events.js";
import { DEFAULT_WAIT_SECONDS } from "../../runtime/settings.js";
import type { CellRunRecorder, SeenView } from "../cell-recorder.js";
import { holderClause } from "../kernel-text.js";
import type { PythonToolDetails } from "../python/result.js";
import { queueHolderFacts } from "../queue-holder.js";
import type { ToolResult, ToolUpdate } from "../types.js";

export { DEFAULT_WAIT_SECONDS };

const KEEP_FINISHED_MS = 60 * 60_000;
const MAX_FINISHED = 50;

export interface RunInfo {
  id: string;
  status: "running" | "finished";
  /** Which tool call it is, for sentences: "python call", "run of a.ipynb". */
  what: string;
  startedAt: number;
  finishedAt?: number;
  /** The call's explicit timeout (seconds); none: the run has no time limit (docs/runs.md). */
  timeoutSeconds?: number;
}

export interface Run extends RunInfo {
  readonly recorder: CellRunRecorder;
  readonly controller: AbortController;
  readonly done: Promise<ToolResult<unknown>>;
  result?: ToolResult<unknown>;
  /** The first cell (1-based position) the next look shows: the one running at the last look. */
  shownFrom: number;
  /** How much of that cell's view the last look showed (lines, clears). */
  seen?: SeenView;
  /** The caller currently following it (its signal aborts the run; its onUpdate gets progress). */
  detach?: () => void;
  /** When its timeout stops it (epoch ms); none without a time limit. */
  stopsAt?: number;
  /** Its final result was given to a caller (a later ask does not send its images again). */
  delivered?: boolean;
  /** Its id was given in a text before its own call returned (it is kept once done, as any run). */
  named?: boolean;
}

export class RunRegistry {
  private readonly runs = new Map<string, Run>();
  private next = 1;

  /**
   * `background` false: the host ends with the call (a one-shot command), so nothing may go on
   * after it: start() waits for the work to end and hands out no run id (docs/runs.md).
   */
  constructor(
    readonly waitSeconds = DEFAULT_WAIT_SECONDS,
    readonly background = true,
    /** Told when a run goes to the background and when such a run ends (docs/view.md). */
    private readonly events?: EventBus,
  ) {}

  get(id: string): Run | undefined {
    this.prune();
    return this.runs.get(id.trim());
  }

  /**
   * The run still going whose work records into `recorder` (the call holding a session's queue),
   * for a text that names it: from then on its id is kept, like one its own call handed out.
   */
  holding(recorder: CellRunRecorder): RunInfo | undefined {
    for (const run of this.runs.values()) {
      if (run.recorder !== recorder || run.status !== "running") continue;
      run.named = true;
      return info(run);
    }
    return undefined;
  }

  /** Ids of the runs still going (for texts and hosts). */
  running(): RunInfo[] {
    return [...this.runs.values()].filter((r) => r.status === "running").map(info);
  }

  /**
   * The runs handed out whose final result no caller has received yet (still going, or finished
   * unseen), oldest first: what a host that ends must not drop silently (nbagent batch at the end
   * of its input, docs/cli.md).
   */
  undelivered(): Run[] {
    this.prune();
    return [...this.runs.values()].filter((r) => !r.delivered);
  }

  /**
   * Starts `work` as a run and follows it for `waitSeconds`: the result when it finishes in time,
   * else what it has so far with the run id (it goes on). The caller's signal interrupts it while
   * the caller follows it. `deadline` is the call's (infinite: no time limit). Without a
   * background the work is simply awaited: the wait budget does not apply.
   */
  async start(
    what: string,
    recorder: CellRunRecorder,
    work: (signal: AbortSignal) => Promise<ToolResult<unknown>>,
    follow: {
      waitSeconds?: number;
      signal?: AbortSignal;
      onUpdate?: ToolUpdate<unknown>;
      deadline?: Deadline;
    },
  ): Promise<ToolResult<unknown>> {
    if (!this.background) return work(follow.signal ?? new AbortController().signal);
    this.prune();
    const controller = new AbortController();
    const id = `r${this.next++}`;
    const end = () => {
      run.status = "finished";
      run.finishedAt = Date.now();
    };
    const run: Run = {
      id,
      what,
      status: "running",
      startedAt: Date.now(),
      recorder,
      controller,
      shownFrom: 1,
      ...(follow.deadline && Number.isFinite(follow.deadline.seconds)
        ? { timeoutSeconds: follow.deadline.seconds, stopsAt: follow.deadline.at }
        : {}),
      done: work(controller.signal).then(
        (result) => {
          end();
          run.result = result;
          return result;
        },
        (err) => {
          end();
          throw err;
        },
      ),
    };
    run.done.catch(() => {});
    this.runs.set(id, run);
    const outcome = await this.follow(run, follow.waitSeconds ?? this.waitSeconds, follow);
    if (outcome) {
      // answered in the call itself: no run id was handed out, unless a text named it meanwhile
      if (run.named) run.delivered = true;
      else this.runs.delete(id);
      return outcome;
    }
    const events = this.events;
    if (events) {
      events.emit({ type: "run-backgrounded", runId: id, what });
      run.done.then(
        (r) => events.emit({ type: "run-ended", runId: id, what, isError: r.isError === true }),
        () => events.emit({ type: "run-ended", runId: id, what, isError: true }),
      );
    }
    return this.partial(run, follow.waitSeconds ?? this.waitSeconds, true);
  }

  /** The `runs` tool's wait: the result once done, or the new output so far after `seconds`. */
  async wait(
    run: Run,
    seconds: number,
    signal?: AbortSignal,
    onUpdate?: ToolUpdate<unknown>,
  ): Promise<ToolResult<unknown>> {
    const outcome = await this.follow(run, seconds, { signal, onUpdate, cancelRun: false });
    if (outcome) return finished(run, outcome);
    return this.partial(run, seconds, false);
  }

  /** Interrupts the run's running cell; `reason` is what its result says (default: the runs tool). */
  interrupt(run: Run, reason: unknown = new Error("interrupted through the runs tool")): void {
    run.controller.abort(reason);
  }

  /** Follows the run for `seconds`; the final result, or undefined when it is still going. */
  private async follow(
    run: Run,
    seconds: number,
    opts: { signal?: AbortSignal; onUpdate?: ToolUpdate<unknown>; cancelRun?: boolean },
  ): Promise<ToolResult<unknown> | undefined> {
    if (run.result) return run.result;
    run.detach?.();
    // The caller's cancel interrupts the run it started; a waiter that gives up only stops following.
    const onAbort = () => {
      if (opts.cancelRun !== false) run.controller.abort(opts.signal?.reason);
      else detach();
    };
    let timer: NodeJS.Timeout | undefined;
    let stop!: () => void;
    const stopped = new Promise<undefined>((resolve) => {
      stop = () => resolve(undefined);
    });
    const detach = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      run.recorder.setOnUpdate(undefined);
      if (run.detach === detach) run.detach = undefined;
      stop();
    };
    run.detach = detach;
    run.recorder.setOnUpdate(opts.onUpdate as ToolUpdate<PythonToolDetails> | undefined);
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener("abort", onAbort, { once: true });
    // No timer for an endless wait (a host that waits for a run to end, docs/cli.md).
    if (Number.isFinite(seconds)) timer = setTimeout(detach, Math.max(0, seconds * 1000));
    try {
      return await Promise.race([run.done, stopped]);
    } finally {
      detach();
    }
  }

  private partial(run: Run, seconds: number, first: boolean): ToolResult<unknown> {
    const snapshot = run.recorder.snapshot(run.shownFrom, run.seen);
    const moved = snapshot.current !== 0 && snapshot.current !== run.shownFrom;
    run.seen = snapshot.current ? snapshot.currentView : run.seen;
    if (moved) run.shownFrom = snapshot.current;
    // The final result starts after what this look showed (docs/runs.md).
    run.recorder.markShown(run.shownFrom, run.seen);
    const cells = snapshot.details.cells;
    const running = cells.find((c) => c.status === "running");
    const elapsed = Math.round((Date.now() - run.startedAt) / 1000);
    const where = running ? `cell ${running.index} is running` : waitingText(run.recorder);
    const saving = run.what.startsWith("run of")
      ? ", saving each cell's outputs into the notebook as it finishes,"
      : "";
    const head = `${first ? `Still running after ${seconds} s` : `Still running (${elapsed} s so far)`}: run ${run.id}, ${run.what}; ${where}. It goes on in the background${saving} ${limitText(run)}.`;
    const shown = first
      ? "Output so far:"
      : `New output since the last look${snapshot.from > 1 ? ` (from cell ${cells[snapshot.from - 1]?.index} on)` : ""}:`;
    const next = `To wait for more or for the result, call the runs tool: {"run_id":"${run.id}"} (waits up to ${this.waitSeconds} s; "wait": seconds to change that). To stop it: {"run_id":"${run.id}","action":"interrupt"}.`;
    return {
      content: [{ type: "text", text: [head, shown, snapshot.text || "(nothing yet)", next].join("\n") }],
      details: { ...snapshot.details, run: info(run) },
    };
  }

  private prune(now = Date.now()): void {
    const finished = [...this.runs.values()].filter((r) => r.status === "finished");
    for (const r of finished) {
      if (now - (r.finishedAt ?? now) > KEEP_FINISHED_MS) this.runs.delete(r.id);
    }
    const left = finished.filter((r) => this.runs.has(r.id));
    for (const r of left.slice(0, Math.max(0, left.length - MAX_FINISHED))) this.runs.delete(r.id);
  }
}

function info(run: Run): RunInfo {
  return {
    id: run.id,
    status: run.status,
    what: run.what,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    ...(run.timeoutSeconds !== undefined ? { timeoutSeconds: run.timeoutSeconds } : {}),
  };
}

/** What a run with no cell running does: waits for its session's kernel (held by whom), or starts it. */
function waitingText(recorder: CellRunRecorder): string {
  const probe = recorder.waitingFor;
  if (!probe) return "its kernel is starting or busy";
  const facts = queueHolderFacts(probe(), 0);
  return facts ? `it waits for the kernel, which ${holderClause(facts)}` : "its kernel is starting";
}

/** How the run ends: its explicit timeout, or only its end or an interrupt (docs/runs.md). */
function limitText(run: Run): string {
  if (run.timeoutSeconds === undefined || run.stopsAt === undefined)
    return "with no time limit: it runs until it ends or you interrupt it";
  const left = Math.max(0, Math.ceil((run.stopsAt - Date.now()) / 1000));
  return `until it ends or its timeout of ${run.timeoutSeconds} s stops it (in ${left} s)`;
}

/**
 * The original call's result, introduced as the run's end. Its text starts after what earlier looks
 * showed (the recorder's mark); images go to the first caller that receives it, not again.
 */
function finished(run: Run, result: ToolResult<unknown>): ToolResult<unknown> {
  const seconds = Math.round(((run.finishedAt ?? Date.now()) - run.startedAt) / 1000);
  const again = run.delivered === true;
  run.delivered = true;
  const images = result.content.filter((c) => c.type === "image").length;
  const held = again && images > 0;
  const intro = `Run ${run.id} (${run.what}) finished after ${seconds} s.${
    held
      ? ` Its ${images === 1 ? "image was" : `${images} images were`} sent with this result before and ${images === 1 ? "is" : "are"} not sent again.`
      : ""
  } Its result:`;
  const kept = held ? result.content.filter((c) => c.type !== "image") : result.content;
  const [first, ...rest] = kept;
  const content =
    first?.type === "text"
      ? [{ type: "text" as const, text: `${intro}\n${first.text}` }, ...rest]
      : [{ type: "text" as const, text: intro }, ...kept];
  return {
    ...result,
    content,
    details: { ...(result.details as object), run: info(run) },
  };
}
