/**
 * What the page reads from the view's API (docs/view.md "The HTTP server"): the state, the hub's
 * messages and the answers to actions. A copy of the shapes of ../hub.ts and ../wire.ts, since those
 * files' imports reach Node's types; test/view/live-page.test.ts checks at compile time that the
 * server's values fit these.
 */
import type { ViewMessage } from "../protocol.js";

/** A session's key as JSON (runtime/session.ts SessionKey). */
export type Key =
  | { kind: "python"; sessionId: string; cwd: string }
  | { kind: "notebook"; path: string }
  | { kind: "named"; name: string }
  | { kind: "per-call"; of: Key };

export interface HostInfo {
  id: string;
  pid: number;
  kind: string;
  cwd: string;
  startedAt: number;
}

export interface Session {
  key: Key;
  started: boolean;
  alive: boolean;
  busy: boolean;
  waiting: number;
  lastUsed: number;
  memoryBytes?: number;
  runId?: string;
}

export interface Run {
  id: string;
  what: string;
  startedAt: number;
  status: "running" | "finished";
}

export interface CallEnd {
  at: number;
  durationMs: number;
  texts: string[];
  images: number;
  isError: boolean;
}

export interface Call {
  callId: string;
  tool: string;
  params: unknown;
  startedAt: number;
  ended?: CallEnd;
}

/** A cell a call ran, as a host's snapshot lists it (../wire.ts WireCell). */
export interface Cell {
  cellRun: number;
  key: Key;
  code: string;
  cellId?: string;
  startedAt: number;
  endedAt?: number;
  status?: "ok" | "error" | "aborted";
  callId?: string;
  tail: string;
}

/** The events the page uses; it ignores the others. */
export type Event = { seq: number; at: number } & (
  | { type: "session"; change: string; key: Key }
  | { type: "call-started"; callId: string; tool: string; params: unknown }
  | ({ type: "call-ended"; callId: string; tool: string; durationMs: number } & Omit<
      CallEnd,
      "at" | "durationMs"
    >)
  | { type: "cell-started"; cellRun: number; key: Key; code: string; cellId?: string }
  /** text: a stream's text, a display's text form, an error's; none for clear_output. */
  | { type: "cell-output"; cellRun: number; output: { kind: string; text?: string } }
  | { type: "cell-ended"; cellRun: number; status: "ok" | "error" | "aborted" }
  | { type: "run-backgrounded"; runId: string; what: string }
  | { type: "run-ended"; runId: string; what: string; isError: boolean }
  | { type: "notebook-saved"; path: string; cellIds: string[] }
  | { type: "notebook-opened"; path: string }
  | { type: "cells-queued"; path: string; cellIds: string[] }
);

export interface HostView {
  host: HostInfo;
  sessions: Session[];
  runs: Run[];
  calls: Call[];
  /** The cells of those calls (absent from an older server). */
  cells?: Cell[];
}

/** `/api/state`, and the first (`state`) event of `/api/events`. */
export interface State {
  hosts: HostView[];
  notebooks?: ViewMessage[];
}

export type HubMessage =
  | { type: "host-added"; host: HostInfo }
  | { type: "host-removed"; hostId: string }
  | { type: "notebook"; message: ViewMessage }
  | ({ hostId: string } & (
      | { type: "snapshot"; host: HostInfo; sessions: Session[]; runs: Run[]; calls: Call[]; cells?: Cell[] }
      | { type: "event"; event: Event }
      | { type: "sessions"; sessions: Session[] }
      | { type: "runs"; runs: Run[] }
    ));

export type ActionResult =
  | { kind: "interrupted"; runId?: string }
  | { kind: "restarted" }
  | { kind: "exported"; notebook: unknown }
  | { kind: "idle" }
  | { kind: "busy" }
  | { kind: "starting" }
  | { kind: "unknown" }
  | { kind: "finished"; runId: string }
  | { kind: "failed"; message: string };

export type Action =
  | { host: string; action: "interrupt" | "restart" | "export"; key: Key }
  | { host: string; action: "interrupt"; runId: string };
