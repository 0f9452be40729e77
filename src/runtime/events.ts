/**
 * The runtime's event stream (docs/view.md, "Events"): what happens in a host as typed values — a
 * session's kernel started, busy, idle, restarted, dead, shut down; a tool call started and ended
 * with the text the model got; a cell started, printed, ended; a run went to the background and
 * ended; a notebook saved. Layers emit values, never words; a viewer (src/view) words them.
 *
 * Pushed, not polled, and bounded: each subscriber has its own queue of at most `maxQueued` events.
 * Stream output for the same cell that is still queued is merged into one event, keeping at most
 * `maxLines` lines (the latest) and counting the lines left out; when the queue is full anyway the
 * oldest event goes and the subscriber is told how many went (`take().dropped`), so it can ask for
 * a fresh snapshot. A slow subscriber costs at most its queue, whatever the kernels print.
 */
import type { SessionKey } from "./session.js";

/** How a kept session changed. */
export type SessionChange =
  /** Its kernel started (a new session, or a new kernel after its last one was shut down). */
  | "started"
  /** A call waits in its queue behind the call that holds it (the listing's `waiting` counts it). */
  | "queued"
  /** A waiting call left the queue without its turn (its deadline passed, it was cancelled). */
  | "unqueued"
  /** A call has its turn on the kernel (a call that waited leaves the queue so). */
  | "busy"
  /** That call ended: no call holds it. */
  | "idle"
  /** Shut down to give its slot to another session (its state is gone). */
  | "evicted"
  /** Its kernel was restarted (reset, on request, or after a death): a fresh state. */
  | "restarted"
  /** Its kernel died (while a cell ran, or while unused). */
  | "died"
  /** Its kernel's connection was lost (its gateway stayed unreachable); the kernel may live on there. */
  | "disconnected"
  /** The connection to its kernel was made again, the kernel's state kept. */
  | "reconnected"
  /** Shut down for another reason (idle too long, the host ending). */
  | "closed";

/** A MIME value left out of an event: its type and size. */
export interface OmittedMime {
  mime: string;
  bytes: number;
}

/** What a value of a MIME bundle weighs (a string's length; JSON's as text). */
export function mimeValueSize(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value) && value.every((v) => typeof v === "string"))
    return value.reduce((n, v) => n + v.length, 0);
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** One output of a running cell, as the viewer needs it (runtime/event-output.ts bounds it). */
export type CellOutput =
  /** Stream text; `skippedLines` lines before it were left out for a subscriber that fell behind. */
  | { kind: "stream"; name: "stdout" | "stderr"; text: string; skippedLines: number }
  /**
   * A rich output: its MIME types and text form (markdown, plain, …), and the nbformat output itself
   * (`data` without the values named in `omitted`, which were over the bound). `displayId` is the
   * transient display id; `update` marks an update_display_data (it replaces the outputs that
   * carry the same display id, wherever they are).
   */
  | {
      kind: "display";
      mimeTypes: string[];
      text: string;
      output: DisplayNbOutput;
      displayId?: string;
      update?: boolean;
      omitted?: OmittedMime[];
    }
  /** The error the cell raised: `text` its one-line form; ename, evalue and the traceback as nbformat has them. */
  | { kind: "error"; text: string; ename: string; evalue: string; traceback: string[] }
  /** clear_output: now, or (`wait`) when the next output comes. */
  | { kind: "clear"; wait: boolean };

/** A display_data or execute_result as nbformat saves it. */
export type DisplayNbOutput =
  | { output_type: "display_data"; data: Record<string, unknown>; metadata: Record<string, unknown> }
  | {
      output_type: "execute_result";
      data: Record<string, unknown>;
      metadata: Record<string, unknown>;
      execution_count: number | null;
    };

/** A tool call's result as the model got it: its texts in order, and how many images. */
export interface CallResultSummary {
  texts: string[];
  images: number;
  isError: boolean;
}

export type RuntimeEvent =
  | { type: "session"; change: SessionChange; key: SessionKey }
  | { type: "call-started"; callId: string; tool: string; params: unknown }
  | ({ type: "call-ended"; callId: string; tool: string; durationMs: number } & CallResultSummary)
  /** `cellRun` numbers this execution in the host; `cellId` is the notebook cell's id when it has one. */
  | { type: "cell-started"; cellRun: number; key: SessionKey; code: string; cellId?: string }
  | { type: "cell-output"; cellRun: number; output: CellOutput }
  | {
      type: "cell-ended";
      cellRun: number;
      /** ok, error (the code raised), aborted (interrupted, timed out, cancelled, the kernel died). */
      status: "ok" | "error" | "aborted";
      /** The kernel's execution count for it (null: it has none, e.g. it never started). */
      executionCount?: number | null;
    }
  | { type: "run-backgrounded"; runId: string; what: string }
  | { type: "run-ended"; runId: string; what: string; isError: boolean }
  /**
   * A notebook file was written (by a run, or by the notebook tool's insert, edit, move, delete, …);
   * `path` its real path, `cellIds` the cells whose outputs or sources the write changed (a deleted
   * cell's id too).
   */
  | { type: "notebook-saved"; path: string; cellIds: string[] }
  /** The notebook tool read a notebook file (its real path): the agent looked at it. */
  | { type: "notebook-opened"; path: string }
  /**
   * A notebook run's plan (docs/view.md, "Events"): the ids of the cells it is to run in the file at
   * `path` (its real path), in order, when it starts or waits for its kernel; `[]` when it ends, so
   * cells it did not reach are no longer waiting. A cell leaves the plan as its `cell-started` comes.
   * At most MAX_QUEUED_IDS ids (the first ones).
   */
  | { type: "cells-queued"; path: string; cellIds: string[] };

/** Most cell ids a `cells-queued` event carries: a 20,000-cell run tells its first 2,000. */
export const MAX_QUEUED_IDS = 2_000;

/** An event as delivered: numbered in the host (gapless per bus) and timed (ms since the epoch). */
export type StampedEvent = RuntimeEvent & { seq: number; at: number };

export interface SubscribeOptions {
  /** Most events kept for this subscriber before the oldest goes (default 2,000). */
  maxQueued?: number;
  /** Most lines a merged stream output keeps (default 200; the latest are kept). */
  maxLines?: number;
  /** Most characters a merged stream output keeps (default 64 KiB; the latest are kept). */
  maxChars?: number;
  /**
   * Most bytes the queued events may weigh (default 8 MiB, estimated: the text and MIME values
   * they carry): past it the oldest events go, as past maxQueued.
   */
  maxBytes?: number;
}

/** A subscriber's view of the bus: take what is queued, wait for more. */
export class Subscription {
  private queue: StampedEvent[] = [];
  /** What each queued event weighs (eventBytes), in queue order, and their sum. */
  private weights: number[] = [];
  private bytes = 0;
  private dropped = 0;
  private wake?: () => void;
  private closed = false;
  private readonly maxQueued: number;
  private readonly maxLines: number;
  private readonly maxChars: number;
  private readonly maxBytes: number;

  constructor(
    options: SubscribeOptions,
    private readonly onClose: (s: Subscription) => void,
  ) {
    this.maxQueued = Math.max(1, options.maxQueued ?? 2000);
    this.maxLines = Math.max(1, options.maxLines ?? 200);
    this.maxChars = Math.max(1, options.maxChars ?? 64 * 1024);
    this.maxBytes = Math.max(1, options.maxBytes ?? 8 * 2 ** 20);
  }

  /** Events queued now (how far behind the subscriber is). */
  get size(): number {
    return this.queue.length;
  }

  /** What the queued events weigh now (see maxBytes). */
  get queuedBytes(): number {
    return this.bytes;
  }

  /** @internal the bus hands an event over. */
  push(event: StampedEvent): void {
    if (this.closed) return;
    if (event.type === "cell-output" && event.output.kind === "stream" && this.merge(event)) return;
    const e =
      event.type === "cell-output" && event.output.kind === "stream"
        ? { ...event, output: this.bounded(event.output) }
        : event;
    const weight = eventBytes(e);
    // The oldest go until this one fits both bounds (an event heavier than the byte bound alone
    // still goes in: it is bounded where it is made, runtime/event-output.ts).
    while (
      this.queue.length > 0 &&
      (this.queue.length >= this.maxQueued || this.bytes + weight > this.maxBytes)
    ) {
      this.queue.shift();
      this.bytes -= this.weights.shift() ?? 0;
      this.dropped++;
    }
    this.queue.push(e);
    this.weights.push(weight);
    this.bytes += weight;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Merges stream text into the queued output of the same cell and stream, when it is the last event. */
  private merge(event: StampedEvent & { type: "cell-output" }): boolean {
    const last = this.queue[this.queue.length - 1];
    const out = event.output;
    if (
      last?.type !== "cell-output" ||
      last.cellRun !== event.cellRun ||
      last.output.kind !== "stream" ||
      out.kind !== "stream" ||
      last.output.name !== out.name
    )
      return false;
    const merged = {
      kind: "stream" as const,
      name: out.name,
      text: last.output.text + out.text,
      skippedLines: last.output.skippedLines + out.skippedLines,
    };
    const e = { ...event, output: this.bounded(merged) };
    const weight = eventBytes(e);
    this.bytes += weight - (this.weights[this.weights.length - 1] ?? 0);
    this.queue[this.queue.length - 1] = e;
    this.weights[this.weights.length - 1] = weight;
    return true;
  }

  /** Keeps the latest maxLines lines (and maxChars characters), counting the whole lines left out. */
  private bounded(out: CellOutput & { kind: "stream" }): CellOutput & { kind: "stream" } {
    let { text, skippedLines } = out;
    let newlines = 0;
    let cut = -1;
    // Walk back over the text: the cut goes after the newline that leaves maxLines lines.
    for (let i = text.length - 1; i >= 0; i--) {
      if (text.charCodeAt(i) !== 10 || i === text.length - 1) continue;
      newlines++;
      if (newlines >= this.maxLines) {
        cut = i + 1;
        break;
      }
    }
    if (cut > 0) {
      skippedLines += countLines(text.slice(0, cut));
      text = text.slice(cut);
    }
    if (text.length > this.maxChars) {
      const start = text.length - this.maxChars;
      const nl = text.indexOf("\n", start);
      const at = nl >= 0 && nl < text.length - 1 ? nl + 1 : start;
      skippedLines += countLines(text.slice(0, at));
      text = text.slice(at);
    }
    return { ...out, text, skippedLines };
  }

  /** Everything queued, oldest first, and how many events were dropped before them (then reset). */
  take(): { events: StampedEvent[]; dropped: number } {
    const events = this.queue;
    const dropped = this.dropped;
    this.queue = [];
    this.weights = [];
    this.bytes = 0;
    this.dropped = 0;
    return { events, dropped };
  }

  /** Resolves when an event is queued (at once when one is), or the subscription is closed. */
  next(): Promise<void> {
    if (this.queue.length > 0 || this.dropped > 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.weights = [];
    this.bytes = 0;
    this.onClose(this);
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/** What an event weighs in a queue: a small fixed part, and the text and MIME values it carries. */
export function eventBytes(e: StampedEvent): number {
  const base = 200;
  switch (e.type) {
    case "cell-output": {
      const o = e.output;
      if (o.kind === "stream") return base + o.text.length;
      if (o.kind === "error") return base + o.text.length + o.traceback.reduce((n, t) => n + t.length, 0);
      if (o.kind === "clear") return base;
      let n = base + o.text.length;
      for (const v of Object.values(o.output.data)) n += mimeValueSize(v);
      return n;
    }
    case "cell-started":
      return base + e.code.length;
    case "call-started":
      return base + paramsBytes(e.params);
    case "call-ended":
      return base + e.texts.reduce((n, t) => n + t.length, 0);
    case "cells-queued":
      return base + e.cellIds.reduce((n, id) => n + id.length + 3, 0);
    default:
      return base;
  }
}

/** A call's parameters as text (the toolbox already cut strings over 20,000 characters). */
function paramsBytes(params: unknown): number {
  try {
    return JSON.stringify(params)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** Whole lines in a text (a last line without its newline counts). */
function countLines(text: string): number {
  if (!text) return 0;
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return text.endsWith("\n") ? n : n + 1;
}

/** The runtime's bus: emit() stamps an event and hands it to every subscriber and listener. */
export class EventBus {
  private seq = 0;
  private cellRuns = 0;
  private readonly subscriptions = new Set<Subscription>();
  private readonly listeners = new Set<(event: StampedEvent) => void>();

  /** A number for a new cell execution (cell-started … cell-ended carry it). */
  nextCellRun(): number {
    return ++this.cellRuns;
  }

  /** Someone is listening (emitters may skip building costly events when not). */
  get active(): boolean {
    return this.subscriptions.size > 0 || this.listeners.size > 0;
  }

  emit(event: RuntimeEvent): void {
    const stamped = { ...event, seq: ++this.seq, at: Date.now() } as StampedEvent;
    for (const l of this.listeners) {
      try {
        l(stamped);
      } catch {
        // a listener's failure is its own; the host goes on
      }
    }
    for (const s of this.subscriptions) s.push(stamped);
  }

  /** A bounded queue of the events from now on (see Subscription). */
  subscribe(options: SubscribeOptions = {}): Subscription {
    const s = new Subscription(options, (x) => this.subscriptions.delete(x));
    this.subscriptions.add(s);
    return s;
  }

  /** A synchronous listener (in-process state that must see every event, kept bounded by its owner). */
  listen(fn: (event: StampedEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
