/**
 * What a host's view socket and a viewer say to each other (docs/view.md, "Across processes"): one
 * JSON value per line. The host sends a snapshot when a viewer connects (and again when the viewer
 * fell behind and events were dropped), then the events as they happen, a fresh list of sessions
 * after session events and of runs after run events, and the answer to each action. A viewer sends
 * actions. Values only; the page words them.
 */
import type { StampedEvent } from "../runtime/events.js";
import type { SessionKey } from "../runtime/session.js";

/** What kind of nbagent process a host is. */
export type HostKind = "mcp-stdio" | "mcp-http" | "batch" | "call" | "python" | "notebook" | "pi";

export interface HostInfo {
  /** Unique among the user's hosts: `<pid>-<random>` (the socket's name). */
  id: string;
  pid: number;
  kind: HostKind;
  cwd: string;
  /** ms since the epoch. */
  startedAt: number;
}

/** A kept session as the view lists it. */
export interface WireSession {
  key: SessionKey;
  started: boolean;
  alive: boolean;
  backend?: "local" | "gateway";
  kernelId?: string;
  /** A call holds its kernel now. */
  busy: boolean;
  /** Calls waiting behind it. */
  waiting: number;
  lastUsed: number;
  memoryBytes?: number;
  /** The run holding it, when the holder is one (a python call or notebook run). */
  runId?: string;
}

export interface WireRun {
  id: string;
  what: string;
  startedAt: number;
  /** Went on in the background (its id was handed out), rather than being waited for by its call. */
  status: "running" | "finished";
}

/** A tool call: its start, and its end once it ended (the texts exactly as the model got them). */
export interface WireCall {
  callId: string;
  tool: string;
  params: unknown;
  startedAt: number;
  ended?: { at: number; durationMs: number; texts: string[]; images: number; isError: boolean };
}

export type HostMessage =
  | {
      type: "snapshot";
      host: HostInfo;
      sessions: WireSession[];
      runs: WireRun[];
      /** The latest calls, oldest first (at most RECENT_CALLS). */
      calls: WireCall[];
    }
  | { type: "event"; event: StampedEvent }
  | { type: "sessions"; sessions: WireSession[] }
  | { type: "runs"; runs: WireRun[] }
  | { type: "action-result"; id: string; result: ActionResult };

/**
 * interrupt: a session's running cell (key) or a run (runId); restart: a session's kernel; export:
 * a python session's cells as the notebook export_notebook writes (nbformat 4 JSON).
 */
export interface ActionRequest {
  type: "action";
  id: string;
  action: "interrupt" | "restart" | "export";
  key?: SessionKey;
  runId?: string;
}

export type ActionResult =
  /** The run was interrupted (its result says "interrupted from the view"). */
  | { kind: "interrupted"; runId?: string }
  /** The session's kernel was restarted (the next result on it says so). */
  | { kind: "restarted" }
  /** The python session's notebook (nbformat 4 JSON, as export_notebook writes it). */
  | { kind: "exported"; notebook: unknown }
  /** Nothing runs there (interrupt), or a call holds it (restart: interrupt it first). */
  | { kind: "idle" }
  | { kind: "busy" }
  | { kind: "starting" }
  /** No such session or run, or the run already ended. */
  | { kind: "unknown" }
  | { kind: "finished"; runId: string }
  | { kind: "failed"; message: string };

export const RECENT_CALLS = 50;

/**
 * Keeps a host's latest calls up to date with one event (a call started: appended, the oldest past
 * `limit` dropped; a call ended: its end recorded). The host keeps them for a viewer's snapshot, the
 * hub for the page's; both read the same events.
 */
export function noteCall(calls: WireCall[], e: StampedEvent, limit: number): void {
  if (e.type === "call-started") {
    calls.push({ callId: e.callId, tool: e.tool, params: e.params, startedAt: e.at });
    if (calls.length > limit) calls.shift();
  } else if (e.type === "call-ended") {
    const call = calls.find((c) => c.callId === e.callId);
    if (call)
      call.ended = {
        at: e.at,
        durationMs: e.durationMs,
        texts: e.texts,
        images: e.images,
        isError: e.isError,
      };
  }
}
