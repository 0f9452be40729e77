/**
 * A host's view socket (docs/view.md, "Across processes"): every nbagent process that holds a
 * toolbox listens on `<socket root>/view/host-<pid>-<random>.sock` (the user's 0700 socket root,
 * which every kernel hides), so `nbagent view` can show what it does and act on it. A viewer that
 * connects gets a snapshot, then the events; its actions (interrupt, restart) take the same runtime
 * and run-registry calls as the kernels tool, marked as coming from the view. The socket is removed
 * when the host ends; a SIGKILLed host's is found dead (connection refused) and removed by viewers.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, renameSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { socketRoot } from "../kernel/local/connection-file.js";
import { boundBundle } from "../runtime/event-output.js";
import type { StampedEvent } from "../runtime/events.js";
import { keyText, type SessionKey } from "../runtime/session.js";
import type { Toolbox } from "../tools/index.js";
import { sessionNotebook } from "../tools/python/session-notebook.js";
import { CellCallTag } from "../tools/queue-holder.js";
import {
  type ActionRequest,
  type ActionResult,
  type HostInfo,
  type HostKind,
  type HostMessage,
  noteCall,
  noteCell,
  noteNotebook,
  RECENT_CALLS,
  type WireCall,
  type WireCell,
  type WireRun,
  type WireSession,
} from "./wire.js";

/** The reason a run interrupted from the view ends with; its result says it. */
export const VIEW_INTERRUPT_REASON = "interrupted from the view, by a person (nbagent view)";

/** The folder of the hosts' sockets (made 0700), or undefined when the user has no socket root. */
export function viewSocketDir(root = socketRoot()): string | undefined {
  if (!root) return undefined;
  const dir = join(root, "view");
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  return dir;
}

/** The sockets to remove if the process exits without closing them (one exit listener for all). */
const onExit = new Set<() => void>();
let exitHooked = false;

export interface ViewHost {
  readonly path: string;
  readonly info: HostInfo;
  close(): Promise<void>;
}

/**
 * Starts the host's view socket; undefined when there is no socket root or NBAGENT_VIEW=0 (the host
 * works the same, it is only not seen).
 */
export async function serveViewSocket(
  toolbox: Toolbox,
  kind: HostKind,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
  /** Events the host had before its socket (host-later.ts): a late viewer's snapshot holds them. */
  earlier: StampedEvent[] = [],
): Promise<ViewHost | undefined> {
  if (env.NBAGENT_VIEW === "0") return undefined;
  const dir = viewSocketDir();
  if (!dir) return undefined;
  const id = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const path = join(dir, `host-${id}.sock`);
  const info: HostInfo = { id, pid: process.pid, kind, cwd, startedAt: Date.now() };
  const state = new HostState(toolbox, info, earlier);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    serveViewer(socket, toolbox, state);
  });
  server.on("error", () => {});
  // Bound under another name and renamed once it listens: a viewer that sees the name connects to a
  // socket that answers (one that refused would be taken for a dead host's and removed).
  const bound = join(dir, `.binding-${id}.sock`);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(bound, () => resolve());
    });
    renameSync(bound, path);
  } catch {
    server.close();
    try {
      unlinkSync(bound);
    } catch {
      // not made
    }
    state.dispose();
    return undefined;
  }
  const unlink = () => {
    try {
      unlinkSync(path);
    } catch {
      // gone already
    }
  };
  // An exit without close() (process.exit) still takes the socket away.
  onExit.add(unlink);
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", () => {
      for (const f of onExit) f();
    });
  }
  // Nothing here keeps the process alive.
  server.unref();
  let closed: Promise<void> | undefined;
  return {
    path,
    info,
    close() {
      closed ??= new Promise<void>((resolve) => {
        onExit.delete(unlink);
        state.dispose();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        unlink();
      });
      return closed;
    },
  };
}

/** What a new viewer's snapshot needs besides the live listing: the latest calls, their cells, the notebooks touched. */
class HostState {
  private readonly calls: WireCall[] = [];
  private readonly cells: WireCell[] = [];
  private readonly notebooks: string[] = [];
  private readonly stop: () => void;
  /**
   * Events not yet noted: they are noted after the event loop's current turn (or when a snapshot is
   * taken), not while the tool that emitted them runs, so a call's result goes out first
   * (docs/mcp.md, "Cost per call").
   */
  private pending: StampedEvent[] = [];
  private later?: NodeJS.Immediate;

  constructor(
    private readonly toolbox: Toolbox,
    readonly info: HostInfo,
    earlier: StampedEvent[],
  ) {
    this.pending = [...earlier];
    this.stop = toolbox.runtime.events.listen((e) => {
      this.pending.push(e);
      this.later ??= setImmediate(() => this.notePending()).unref();
    });
  }

  private notePending(): void {
    if (this.later) clearImmediate(this.later);
    this.later = undefined;
    const events = this.pending;
    this.pending = [];
    for (const e of events) {
      noteCall(this.calls, e, RECENT_CALLS);
      noteCell(this.cells, this.calls, e);
      noteNotebook(this.notebooks, e);
    }
  }

  snapshot(): HostMessage {
    this.notePending();
    return {
      type: "snapshot",
      host: this.info,
      sessions: this.sessions(),
      runs: this.runs(),
      calls: this.calls.map((c) => ({ ...c })),
      cells: this.cells.map((c) => ({ ...c })),
      notebooks: [...this.notebooks],
    };
  }

  sessions(): WireSession[] {
    return this.toolbox.runtime.listKernels().sessions.map((s) => {
      const tag = s.holder?.tag;
      const runId = tag instanceof CellCallTag ? tag.runId() : undefined;
      return {
        key: s.key,
        started: s.started,
        alive: s.alive,
        ...(s.backend ? { backend: s.backend } : {}),
        ...(s.kernelId ? { kernelId: s.kernelId } : {}),
        busy: s.holder !== undefined,
        waiting: s.waiting.length,
        lastUsed: s.lastUsed,
        ...(s.memoryBytes !== undefined ? { memoryBytes: s.memoryBytes } : {}),
        ...(runId ? { runId } : {}),
      };
    });
  }

  runs(): WireRun[] {
    return this.toolbox.runs
      .running()
      .map((r) => ({ id: r.id, what: r.what, startedAt: r.startedAt, status: r.status }));
  }

  dispose(): void {
    this.stop();
    if (this.later) clearImmediate(this.later);
    this.later = undefined;
    this.pending = [];
  }
}

/**
 * Least time between two writes to a viewer (ms): the events of a fast run that come meanwhile go
 * in the next write, one system call for several (docs/view.md, "Cost"). A write after a quiet
 * spell goes at once.
 */
export const VIEW_WRITE_MS = 5;

/** Writes the snapshot and then the events to one viewer, and answers its actions. */
function serveViewer(socket: Socket, toolbox: Toolbox, state: HostState): void {
  const sub = toolbox.runtime.events.subscribe();
  let open = true;
  /** Writes messages, one line each, in one write to the socket; waits while the socket is full. */
  const write = async (msgs: HostMessage[]): Promise<void> => {
    if (!open || msgs.length === 0) return;
    let text = "";
    for (const msg of msgs) text += `${JSON.stringify(msg)}\n`;
    if (!socket.write(text))
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      });
  };
  const end = () => {
    open = false;
    sub.close();
  };
  socket.on("close", end);
  socket.on("error", end);
  // The writer: the snapshot, then what the bus queued, as fast as the viewer reads, at most one
  // write every VIEW_WRITE_MS.
  (async () => {
    await write([state.snapshot()]);
    let last = performance.now();
    while (open) {
      await sub.next();
      // After the event loop's turn, not while the tool that emitted the events runs: a call's
      // result goes out first, and the events of one turn go to the viewer together, in one write
      // (docs/mcp.md, "Cost per call").
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!open) break;
      const wait = last + VIEW_WRITE_MS - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
      if (!open) break;
      const { events, dropped } = sub.take();
      // Events were dropped for this slow viewer: what they changed is in a fresh snapshot, taken
      // now, with these events (it holds what they did), and sent after them — sent before, the
      // viewer would apply them twice (a cell that started among them listed twice).
      const snapshot = dropped > 0 ? state.snapshot() : undefined;
      let sessions = false;
      let runs = false;
      const msgs: HostMessage[] = [];
      for (const event of events) {
        msgs.push({ type: "event", event });
        if (event.type === "session") sessions = true;
        if (event.type === "run-backgrounded" || event.type === "run-ended") runs = true;
      }
      if (snapshot) msgs.push(snapshot);
      else {
        if (sessions) msgs.push({ type: "sessions", sessions: state.sessions() });
        if (runs) msgs.push({ type: "runs", runs: state.runs() });
      }
      await write(msgs);
      last = performance.now();
    }
  })().catch(() => socket.destroy());
  const lines = createInterface({ input: socket, crlfDelay: Number.POSITIVE_INFINITY });
  lines.on("error", () => {});
  lines.on("line", (line) => {
    let request: ActionRequest;
    try {
      request = JSON.parse(line) as ActionRequest;
    } catch {
      return;
    }
    if (request?.type !== "action" || typeof request.id !== "string") return;
    act(toolbox, request).then(
      (result) => write([{ type: "action-result", id: request.id, result }]),
      (err: unknown) =>
        write([
          {
            type: "action-result",
            id: request.id,
            result: { kind: "failed", message: String((err as Error)?.message ?? err) },
          },
        ]),
    );
  });
}

/** An action from the view, through the same calls as the kernels tool's (docs/kernels-tool.md). */
async function act(toolbox: Toolbox, request: ActionRequest): Promise<ActionResult> {
  const { runtime, runs } = toolbox;
  if (request.runId !== undefined) {
    const run = runs.get(String(request.runId));
    if (!run) return { kind: "unknown" };
    if (request.action !== "interrupt") return { kind: "failed", message: "a run can only be interrupted" };
    if (run.status !== "running") return { kind: "finished", runId: run.id };
    runs.interrupt(run, new Error(VIEW_INTERRUPT_REASON));
    return { kind: "interrupted", runId: run.id };
  }
  const key = request.key as SessionKey | undefined;
  if (!key || typeof key !== "object")
    return { kind: "failed", message: "the action names no session (key) or run (runId)" };
  if (request.action === "export") return exportSession(toolbox, key);
  const state = runtime.listKernels().sessions.find((s) => keyText(s.key) === keyText(key));
  if (!state) return { kind: "unknown" };
  if (request.action === "restart") {
    const done = await runtime.restartKernel(state.key, "view");
    return { kind: done.kind };
  }
  // The run holding the kernel is stopped as the kernels tool stops it, so its result says who.
  const tag = state.holder?.tag;
  const runId = tag instanceof CellCallTag ? tag.runId() : undefined;
  const run = runId ? runs.get(runId) : undefined;
  if (run && run.status === "running") {
    runs.interrupt(run, new Error(VIEW_INTERRUPT_REASON));
    return { kind: "interrupted", runId: run.id };
  }
  const done = await runtime.interruptKernel(state.key);
  return done.kind === "interrupted" ? { kind: "interrupted" } : { kind: done.kind };
}

/**
 * A python session's record as the notebook export_notebook writes (tools/python/session-notebook.ts), as
 * JSON rather than a file. A session that has run nothing yet exports an empty notebook.
 */
async function exportSession(toolbox: Toolbox, key: SessionKey): Promise<ActionResult> {
  const records = toolbox.runtime.records;
  const record =
    key.kind === "python" && typeof key.sessionId === "string" && typeof key.cwd === "string"
      ? records.python(key.sessionId, key.cwd)
      : key.kind === "named" && typeof key.name === "string"
        ? records.named(key.name)
        : undefined;
  if (!record)
    return { kind: "failed", message: "only a python session (or a named one) has a notebook to export" };
  const notebook = sessionNotebook(await record.read()).notebook;
  // What crosses the socket is bounded as the events are: a huge MIME value is named, not sent.
  for (const cell of notebook.cells)
    if (Array.isArray(cell.outputs))
      for (const o of cell.outputs as Record<string, unknown>[])
        if (o && typeof o.data === "object" && o.data !== null)
          o.data = boundBundle(o.data as Record<string, unknown>).data as never;
  return { kind: "exported", notebook };
}

/**
 * For hosts that make toolboxes synchronously (MCP HTTP sessions, pi sessions): starts the view
 * socket and makes the toolbox's dispose() close it first. Returns the same toolbox.
 */
export function withViewSocket(toolbox: Toolbox, kind: HostKind, cwd: string): Toolbox {
  const view = serveViewSocket(toolbox, kind, cwd).catch(() => undefined);
  const dispose = toolbox.dispose;
  toolbox.dispose = async () => {
    await (await view)?.close();
    await dispose();
  };
  return toolbox;
}
