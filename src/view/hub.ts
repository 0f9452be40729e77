/**
 * The viewer's side of the hosts' sockets (docs/view.md, "Across processes"): watches the folder,
 * connects to every host socket in it, keeps each host's snapshot up to date from its messages, and
 * passes events on to the page. A socket that refuses the connection belongs to a host that died
 * without removing it (SIGKILL): it is removed. A host whose connection closes is gone from the state.
 */
import { randomUUID } from "node:crypto";
import { existsSync, type FSWatcher, readdirSync, unlinkSync, watch } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { NotebookFeed } from "./notebook-feed.js";
import type { ViewMessage } from "./protocol.js";
import {
  type ActionRequest,
  type ActionResult,
  type HostInfo,
  type HostMessage,
  noteCall,
  noteCell,
  RECENT_CALLS,
  type WireCall,
  type WireCell,
  type WireRun,
  type WireSession,
} from "./wire.js";

const MAX_TRIES = 50;
const RETRY_MS = 200;

export interface HostView {
  host: HostInfo;
  sessions: WireSession[];
  runs: WireRun[];
  calls: WireCall[];
  /** The cells of those calls (empty from a host that does not send them). */
  cells: WireCell[];
}

/** What the page is told: a host came or went, or one of its messages (events, listings). */
export type HubMessage =
  | { type: "host-added"; host: HostInfo }
  /** A notebook the agent touched, or a python session's notebook: a snapshot or a patch (protocol.ts). */
  | { type: "notebook"; message: ViewMessage }
  | { type: "host-removed"; hostId: string }
  | ({ hostId: string } & Exclude<HostMessage, { type: "action-result" }>);

interface Connection {
  file: string;
  socket: Socket;
  view?: HostView;
  pending: Map<string, (r: ActionResult) => void>;
}

export class ViewHub {
  private readonly connections = new Map<string, Connection>();
  /** Sockets that closed without a snapshot: how many looks they had (a dying host's, retried). */
  private readonly tries = new Map<string, number>();
  private readonly listeners = new Set<(m: HubMessage) => void>();
  private watcher?: FSWatcher;
  private closed = false;
  /** The notebooks the hosts touched and their python sessions' notebooks (notebook-feed.ts). */
  private readonly feed: NotebookFeed;
  private started = false;

  constructor(
    private readonly dir: string,
    options: { settleMs?: number } = {},
  ) {
    this.feed = new NotebookFeed({
      tell: (message) => this.tell({ type: "notebook", message }),
      act: (hostId, action) => this.act(hostId, action),
      ...options,
    });
  }

  /** Watches the folder and connects to its hosts; again: nothing (a mounted view calls it per request). */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    try {
      this.watcher = watch(this.dir, () => this.scan());
      this.watcher.on("error", () => {});
    } catch {
      // no watching: the scan below still finds the hosts there now
    }
    this.scan();
  }

  /** Connects to every host socket not connected yet. */
  scan(): void {
    if (this.closed) return;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith("host-") || !name.endsWith(".sock")) continue;
      const file = join(this.dir, name);
      if (!this.connections.has(file)) this.open(file);
    }
  }

  private open(file: string): void {
    const socket = connect(file);
    const conn: Connection = { file, socket, pending: new Map() };
    this.connections.set(file, conn);
    socket.on("error", (err: NodeJS.ErrnoException) => {
      // Nobody listens: the host died without removing its socket.
      if (err.code === "ECONNREFUSED" && !conn.view) {
        try {
          unlinkSync(file);
        } catch {
          // removed meanwhile
        }
      }
    });
    socket.on("close", () => {
      if (this.connections.get(file) === conn) this.connections.delete(file);
      for (const resolve of conn.pending.values()) resolve({ kind: "failed", message: "the host ended" });
      if (conn.view) {
        this.tell({ type: "host-removed", hostId: conn.view.host.id });
        const id = conn.view.host.id;
        this.fed(() => this.feed.hostRemoved(id));
      }
      // A killed host leaves its socket: a new look finds it refused and removes it. Until the
      // host's last process is gone (its kernels end a moment later) the look may still connect
      // and get nothing: look again a few times.
      const n = this.tries.get(file) ?? 0;
      if (n < MAX_TRIES && existsSync(file)) {
        this.tries.set(file, n + 1);
        setTimeout(() => this.scan(), conn.view ? 0 : RETRY_MS).unref();
      } else this.tries.delete(file);
    });
    const lines = createInterface({ input: socket, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on("error", () => {});
    lines.on("line", (line) => {
      let msg: HostMessage;
      try {
        msg = JSON.parse(line) as HostMessage;
      } catch {
        return;
      }
      this.handle(conn, msg);
    });
  }

  private handle(conn: Connection, msg: HostMessage): void {
    if (msg.type === "action-result") {
      conn.pending.get(msg.id)?.(msg.result);
      conn.pending.delete(msg.id);
      return;
    }
    if (msg.type === "snapshot") {
      const added = !conn.view;
      this.tries.delete(conn.file);
      conn.view = {
        host: msg.host,
        sessions: msg.sessions,
        runs: msg.runs,
        calls: msg.calls,
        cells: msg.cells ?? [],
      };
      if (added) this.tell({ type: "host-added", host: msg.host });
      this.tell({ hostId: msg.host.id, ...msg });
      this.fed(() =>
        this.feed.hostSnapshot(
          msg.host.id,
          msg.sessions ?? [],
          msg.calls ?? [],
          msg.runs ?? [],
          msg.cells ?? [],
          msg.notebooks ?? [],
        ),
      );
      return;
    }
    const view = conn.view;
    if (!view) return;
    if (msg.type === "sessions") view.sessions = msg.sessions;
    else if (msg.type === "runs") view.runs = msg.runs;
    else if (msg.type === "event") {
      noteCall(view.calls, msg.event, RECENT_CALLS);
      noteCell(view.cells, view.calls, msg.event);
    }
    this.tell({ hostId: view.host.id, ...msg });
    if (msg.type === "event") this.fed(() => this.feed.event(view.host.id, msg.event));
    else if (msg.type === "sessions") this.fed(() => this.feed.sessionList(view.host.id, msg.sessions ?? []));
  }

  /**
   * Passes a host's message to the notebook feed. A host of another nbagent version may send what
   * the feed does not expect: that costs its notebooks an update, never the view.
   */
  private fed(fn: () => void): void {
    try {
      fn();
    } catch {
      // the notebook stays as it was; the next file read or export brings it up to date
    }
  }

  private tell(m: HubMessage): void {
    for (const l of this.listeners) l(m);
  }

  /** Every connected host, oldest first, and every notebook shown (a `notebook` snapshot each). */
  state(): { hosts: HostView[]; notebooks: ViewMessage[] } {
    const hosts = [...this.connections.values()].flatMap((c) => (c.view ? [c.view] : []));
    return {
      hosts: hosts.sort((a, b) => a.host.startedAt - b.host.startedAt),
      notebooks: this.feed.notebooks(),
    };
  }

  listen(fn: (m: HubMessage) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Sends an action to a host and waits for its answer (undefined: no such host). */
  async act(hostId: string, action: Omit<ActionRequest, "type" | "id">): Promise<ActionResult | undefined> {
    const conn = [...this.connections.values()].find((c) => c.view?.host.id === hostId);
    if (!conn) return undefined;
    const id = randomUUID();
    const answer = new Promise<ActionResult>((resolve) => conn.pending.set(id, resolve));
    const request: ActionRequest = { type: "action", id, ...action };
    conn.socket.write(`${JSON.stringify(request)}\n`);
    return answer;
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.feed.close();
    for (const c of this.connections.values()) c.socket.destroy();
    this.connections.clear();
    this.listeners.clear();
  }
}
