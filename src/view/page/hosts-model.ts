/**
 * Every host as the page holds it (docs/view.md "The page"): kept from `/api/events` — the state
 * first, then the hub's messages — with its sessions, runs, latest calls and the cells they ran.
 * Pure data (no DOM), so what the page shows follows from the messages alone.
 */
import type { Call, Cell, Event, HostInfo, HostView, HubMessage, Key, Run, Session, State } from "./api.js";

/** How many calls, and cells, the page keeps per host (the oldest go first). */
export const KEPT_CALLS = 200;
export const KEPT_CELLS = 400;
/** The latest stream text of a running cell the page keeps. */
const TAIL_CHARS = 2000;

/**
 * One execution of a cell (a python cell, a notebook cell), from its cell events or a host's
 * snapshot. `status` is "gone" when the page learnt from a listing that it no longer runs; `callId`
 * the call it ran for (matched by its tool and session: the open call that fits, latest first);
 * `tail` the end of its printed output (its latest characters).
 */
export interface CellRun extends Omit<Cell, "status"> {
  status?: Cell["status"] | "gone";
}

export interface Host {
  info: HostInfo;
  sessions: Session[];
  runs: Run[];
  calls: Call[];
  cells: CellRun[];
}

/** The key as one text (the same value always gives the same text). */
export function keyId(key: Key): string {
  switch (key.kind) {
    case "python":
      return JSON.stringify(["python", key.sessionId, key.cwd]);
    case "notebook":
      return JSON.stringify(["notebook", key.path]);
    case "named":
      return JSON.stringify(["named", key.name]);
    case "per-call":
      return JSON.stringify(["per-call", keyId(key.of)]);
  }
}

/** What changed, for the page to redraw only that. */
export type Change =
  | { what: "hosts" }
  | { what: "host"; hostId: string; calls?: string[] }
  | { what: "notebook" }
  | { what: "nothing" };

export class HostsModel {
  readonly hosts = new Map<string, Host>();

  /** The state a stream begins with: replaces everything (a reconnect starts again from it). */
  reset(state: State): void {
    this.hosts.clear();
    for (const h of state.hosts ?? []) this.hosts.set(h.host.id, fromView(h));
  }

  apply(m: HubMessage): Change {
    if (m.type === "notebook") return { what: "notebook" };
    if (m.type === "host-added") {
      if (!this.hosts.has(m.host.id))
        this.hosts.set(m.host.id, { info: m.host, sessions: [], runs: [], calls: [], cells: [] });
      return { what: "hosts" };
    }
    if (m.type === "host-removed") {
      this.hosts.delete(m.hostId);
      return { what: "hosts" };
    }
    if (m.type === "snapshot") {
      const known = this.hosts.get(m.hostId);
      const h = fromView(m);
      this.hosts.set(m.hostId, h);
      // The host's own list of its calls' cells is the truth (their ends too); from a host that
      // sends none, the cells the page saw stay, those whose end was dropped settled.
      if (!m.cells && known) {
        h.cells = known.cells;
        settle(h);
      }
      return known ? { what: "host", hostId: m.hostId } : { what: "hosts" };
    }
    const h = this.hosts.get(m.hostId);
    if (!h) return { what: "nothing" };
    if (m.type === "sessions") {
      h.sessions = m.sessions;
      return { what: "host", hostId: m.hostId };
    }
    if (m.type === "runs") {
      h.runs = m.runs;
      return { what: "host", hostId: m.hostId };
    }
    return this.event(h, m.event);
  }

  private event(h: Host, e: Event): Change {
    const hostId = h.info.id;
    switch (e.type) {
      case "call-started":
        h.calls.push({ callId: e.callId, tool: e.tool, params: e.params, startedAt: e.at });
        if (h.calls.length > KEPT_CALLS) h.calls.shift();
        return { what: "host", hostId, calls: [e.callId] };
      case "call-ended": {
        const call = h.calls.find((c) => c.callId === e.callId);
        if (!call) return { what: "nothing" };
        call.ended = {
          at: e.at,
          durationMs: e.durationMs,
          texts: e.texts,
          images: e.images,
          isError: e.isError,
        };
        return { what: "host", hostId, calls: [e.callId] };
      }
      case "cell-started": {
        const callId = callFor(h, e.key);
        h.cells.push({
          cellRun: e.cellRun,
          key: e.key,
          code: e.code,
          cellId: e.cellId,
          startedAt: e.at,
          callId,
          tail: "",
        });
        if (h.cells.length > KEPT_CELLS) h.cells.shift();
        return { what: "host", hostId, calls: callId ? [callId] : [] };
      }
      case "cell-output": {
        const cell = h.cells.find((c) => c.cellRun === e.cellRun);
        if (!cell || typeof e.output?.text !== "string") return { what: "nothing" };
        cell.tail = (cell.tail + e.output.text).slice(-TAIL_CHARS);
        return { what: "host", hostId, calls: cell.callId ? [cell.callId] : [] };
      }
      case "cell-ended": {
        const cell = h.cells.find((c) => c.cellRun === e.cellRun);
        if (!cell) return { what: "nothing" };
        cell.endedAt = e.at;
        cell.status = e.status;
        return { what: "host", hostId, calls: cell.callId ? [cell.callId] : [] };
      }
      default:
        return { what: "nothing" };
    }
  }

  /** The cell running now on a session, if the page saw it start. */
  running(h: Host, key: Key): CellRun | undefined {
    const id = keyId(key);
    for (let i = h.cells.length - 1; i >= 0; i--) {
      const c = h.cells[i];
      if (c.endedAt === undefined && keyId(c.key) === id) return c;
    }
    return undefined;
  }

  /** Hosts oldest first (as the API lists them). */
  list(): Host[] {
    return [...this.hosts.values()].sort((a, b) => a.info.startedAt - b.info.startedAt);
  }
}

function fromView(v: Pick<HostView, "sessions" | "runs" | "calls" | "cells"> & { host: HostInfo }): Host {
  return {
    info: v.host,
    sessions: v.sessions ?? [],
    runs: v.runs ?? [],
    calls: (v.calls ?? []).map((c) => ({ ...c })),
    cells: (v.cells ?? []).map((c) => ({ ...c })),
  };
}

/**
 * After a snapshot (sent when events were dropped for the view): a cell the page saw start on a
 * session that no call holds now has ended, its end among the dropped events.
 */
function settle(h: Host): void {
  for (const c of h.cells) {
    if (c.endedAt !== undefined) continue;
    const s = h.sessions.find((x) => keyId(x.key) === keyId(c.key));
    if (!s?.busy) {
      c.endedAt = Date.now();
      c.status = "gone";
    }
  }
}

/** The open call a cell on `key` belongs to: the latest one of the tool that runs on that kind of session. */
function callFor(h: Host, key: Key): string | undefined {
  const base = key.kind === "per-call" ? key.of : key;
  const tool = base.kind === "notebook" ? "notebook" : base.kind === "python" ? "python" : undefined;
  const open = h.calls.filter((c) => !c.ended);
  const fits = open.filter((c) => tool === undefined || c.tool === tool);
  return (fits.at(-1) ?? open.at(-1))?.callId;
}
