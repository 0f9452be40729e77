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

/**
 * One execution of a cell (a python cell, a notebook cell) as the view lists it with its call: from
 * its cell events, its output reduced to the end of what it printed (as the page keeps it).
 */
export interface WireCell {
  /** The events' number for this execution (cell-started … cell-ended). */
  cellRun: number;
  key: SessionKey;
  /** As the cell-started event carries it (cut past 20,000 characters). */
  code: string;
  cellId?: string;
  startedAt: number;
  endedAt?: number;
  status?: "ok" | "error" | "aborted";
  /** The call it ran for (the open call of the tool that runs on its kind of session, latest first). */
  callId?: string;
  /** The end of its printed output: its latest CELL_TAIL_CHARS characters. */
  tail: string;
}

export type HostMessage =
  | {
      type: "snapshot";
      host: HostInfo;
      sessions: WireSession[];
      runs: WireRun[];
      /** The latest calls, oldest first (at most RECENT_CALLS). */
      calls: WireCall[];
      /**
       * The cells those calls ran, oldest first (at most RECENT_CELLS, RECENT_CELL_CHARS of code and
       * tails): a viewer that connects later shows them, running ones too. Absent from older hosts.
       */
      cells?: WireCell[];
      /** The notebook files it touched lately, oldest first (noteNotebook). Absent from older hosts. */
      notebooks?: string[];
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

/** Most notebook files a host's snapshot names as touched lately. */
export const RECENT_NOTEBOOKS = 50;

/**
 * Keeps the notebook files a host touched lately, most recent last (at most RECENT_NOTEBOOKS): a
 * file the notebook tool read or wrote, a run planned or ran cells in. A viewer that connects later
 * lists them, as one that saw the events does.
 */
export function noteNotebook(paths: string[], e: StampedEvent): void {
  const path =
    e.type === "notebook-opened" || e.type === "notebook-saved" || e.type === "cells-queued"
      ? e.path
      : e.type === "cell-started" && e.key.kind === "notebook"
        ? e.key.path
        : undefined;
  if (path === undefined || paths.at(-1) === path) return;
  const at = paths.indexOf(path);
  if (at >= 0) paths.splice(at, 1);
  paths.push(path);
  if (paths.length > RECENT_NOTEBOOKS) paths.shift();
}

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

/** How many cells, and how many characters of their code and tails, a host keeps for a late viewer. */
export const RECENT_CELLS = 200;
export const RECENT_CELL_CHARS = 1024 * 1024;
/** The end of a cell's printed output kept with it (what the page shows of a running cell). */
export const CELL_TAIL_CHARS = 2000;

/** A cell's weight against RECENT_CELL_CHARS. */
const cellChars = (c: WireCell) => c.code.length + c.tail.length;
const charsOf = (cells: readonly WireCell[]) => cells.reduce((n, c) => n + cellChars(c), 0);

/**
 * Keeps the cells of a host's latest calls up to date with one event: a cell started (appended, with
 * the call it ran for; the oldest go past RECENT_CELLS or RECENT_CELL_CHARS, and the cells of calls
 * no longer in `calls`), printed (its tail), ended. `calls` is as noteCall left it before this event.
 * The host keeps them for a viewer's snapshot, the hub for the page's; both read the same events,
 * in the same order, so both match a cell to the same call as a page that saw it start.
 */
export function noteCell(cells: WireCell[], calls: readonly WireCall[], e: StampedEvent): void {
  if (e.type === "cell-started") {
    const cell: WireCell = {
      cellRun: e.cellRun,
      key: e.key,
      code: e.code,
      ...(e.cellId ? { cellId: e.cellId } : {}),
      startedAt: e.at,
      ...optional("callId", callFor(calls, e.key)),
      tail: "",
    };
    const b = booksOf(cells);
    cells.push(cell);
    b.chars += cellChars(cell);
    // The oldest go past either bound (the newest stays whatever its size).
    while (cells.length > 1 && (cells.length > RECENT_CELLS || b.chars > RECENT_CELL_CHARS))
      b.chars -= cellChars(cells.shift()!);
    // Calls leave the list oldest first: while its oldest is the same, every cell's call is listed.
    const oldest = calls[0]?.callId;
    if (!b.checked || oldest !== b.oldest) {
      const listed = new Set(calls.map((c) => c.callId));
      const rest = cells.splice(0, cells.length);
      for (const c of rest) if (c.callId === undefined || listed.has(c.callId)) cells.push(c);
      b.chars = charsOf(cells);
      b.oldest = oldest;
      b.checked = true;
    }
    return;
  }
  if (e.type !== "cell-output" && e.type !== "cell-ended") return;
  let cell: WireCell | undefined;
  for (let i = cells.length - 1; i >= 0 && !cell; i--) if (cells[i].cellRun === e.cellRun) cell = cells[i];
  if (!cell) return;
  if (e.type === "cell-ended") {
    cell.endedAt = e.at;
    cell.status = e.status;
    return;
  }
  const o = e.output;
  const text = o.kind === "stream" || o.kind === "display" || o.kind === "error" ? o.text : undefined;
  if (typeof text === "string" && text) {
    const before = cell.tail.length;
    cell.tail = (cell.tail + text).slice(-CELL_TAIL_CHARS);
    booksOf(cells).chars += cell.tail.length - before;
  }
}

/**
 * What noteCell knows of a list without walking it at every cell (a run's hundreds of cells a
 * second): its characters, and the oldest call listed when it last dropped the cells of calls gone.
 */
interface CellBooks {
  chars: number;
  oldest?: string;
  /** Whether its cells' calls were checked against a calls list (a snapshot's list is not yet). */
  checked: boolean;
}
const books = new WeakMap<WireCell[], CellBooks>();

function booksOf(cells: WireCell[]): CellBooks {
  let b = books.get(cells);
  if (!b) {
    b = { chars: charsOf(cells), checked: false };
    books.set(cells, b);
  }
  return b;
}

function optional<K extends string, V>(k: K, v: V | undefined): { [key in K]?: V } {
  return v === undefined ? {} : ({ [k]: v } as { [key in K]: V });
}

/** The open call a cell on `key` belongs to: the latest one of the tool that runs on that kind of session. */
function callFor(calls: readonly WireCall[], key: SessionKey): string | undefined {
  const base = key.kind === "per-call" ? key.of : key;
  const tool = base.kind === "notebook" ? "notebook" : base.kind === "python" ? "python" : undefined;
  let open: string | undefined;
  for (let i = calls.length - 1; i >= 0; i--) {
    const c = calls[i];
    if (c.ended) continue;
    if (tool === undefined || c.tool === tool) return c.callId;
    open ??= c.callId;
  }
  return open;
}
