/**
 * The notebooks of the view (docs/view.md, "Notebooks in the view"), kept by `nbagent view`'s hub:
 * every notebook file a host's agent touched, and every python session's notebook, each as a
 * NotebookModel (the page's own model) from which the page gets a snapshot and then patches.
 *
 * - A file is read itself (the .ipynb on disk) and watched (its folder, fs.watch, changes coalesced):
 *   the notebook tool's saves, a run's saves and any other program's writes all come as a re-read,
 *   turned into patches by notebook-diff.ts. A file that does not parse (a writer midway) changes
 *   nothing until the next change; a file that is gone is closed, and shown again if it comes back.
 * - A run's cells are marked and grow live from the host's cell events; the file's later save is
 *   reconciled without redrawing the outputs that are the same.
 * - A python session's notebook is what export_notebook would write, asked of its host (`export`
 *   action) when no call of that host is under way, and grown from the cell events in between.
 * - A file stays while any host that touched it is alive; a session's notebook goes with its host.
 */
import { constants, type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { CellOutput, StampedEvent } from "../runtime/events.js";
import { keyText, type SessionKey } from "../runtime/session.js";
import { OutsideRootsError, openFileWithin } from "../sys/confined-path.js";
import { canonicalOutput, cellsOfFile, diffCells, parseNotebook } from "./notebook-diff.js";
import { type ModelCell, NotebookModel } from "./notebook-model.js";
import { joinSource, type SessionRef, type ViewCell, type ViewMessage, type ViewOutput } from "./protocol.js";
import type { ActionRequest, ActionResult, WireCall, WireCell, WireRun, WireSession } from "./wire.js";

/** A live stream output past this many characters is cut to its last STREAM_KEEP (said in its text). */
const STREAM_CAP = 1024 * 1024;
const STREAM_KEEP = 256 * 1024;

/** Session changes that leave the kernel's state as it was (the session's notebook stays as shown). */
const QUEUE_CHANGES = new Set(["busy", "idle", "queued", "unqueued"]);

export interface NotebookFeedOptions {
  /** Where the patches and snapshots go (the hub's listeners). */
  tell(message: ViewMessage): void;
  /** Sends an action to a host (the hub's act): the python sessions' `export`. */
  act(hostId: string, action: Omit<ActionRequest, "type" | "id">): Promise<ActionResult | undefined>;
  /** How long file changes are gathered before one read (ms; default 30). */
  settleMs?: number;
}

interface Tracked {
  path: string;
  title: string;
  model: NotebookModel;
  /** A snapshot went out (the page has it). */
  shown: boolean;
  /** display_id → the cells and output positions that show it (update_display_data). */
  displays: Map<string, { cellId: string; index: number }[]>;
}

interface FileNotebook extends Tracked {
  hosts: Set<string>;
  /** Cells that run now, or ran and whose outputs the file does not have yet: the events are newer. */
  live: Set<string>;
  timer?: NodeJS.Timeout;
  reading?: Promise<void>;
  again: boolean;
  /** Why the file could not be read the last time (kept for the docs' sake: nothing is guessed). */
  problem?: string;
  /** Cells a run of a host plans to run and has not started (`cells-queued`): id → that host. */
  queued: Map<string, string>;
}

interface SessionNotebook extends Tracked {
  hostId: string;
  key: SessionKey;
  /** Its cells need the host's export (new, restarted, events dropped). */
  stale: boolean;
  asking: boolean;
  /** Cells started on it: an export asked before one started is out of date when it comes. */
  started: number;
}

interface Run {
  notebook: Tracked;
  cellId: string;
}

interface HostState {
  /** Python calls under way (their records are written when they end) and background runs. */
  calls: Set<string>;
  runs: Set<string>;
  cellRuns: Map<number, Run>;
}

export class NotebookFeed {
  private readonly files = new Map<string, FileNotebook>();
  private readonly sessions = new Map<string, SessionNotebook>();
  private readonly hosts = new Map<string, HostState>();
  private readonly watchers = new Map<string, { watcher?: FSWatcher; names: Set<string> }>();
  private closed = false;

  constructor(private readonly options: NotebookFeedOptions) {}

  /** Every notebook shown, as the snapshot a new page starts from. */
  notebooks(): ViewMessage[] {
    return [...this.files.values(), ...this.sessions.values()]
      .filter((t) => t.shown)
      .map((t) => this.snapshot(t));
  }

  /**
   * A host's snapshot: its sessions, calls, runs and its calls' cells as they are. A second one for
   * the same host means events were dropped for the hub (it fell behind). The cells it says run now
   * are marked running, whether the hub saw them start or not (it connected while they ran).
   */
  hostSnapshot(
    hostId: string,
    sessions: WireSession[],
    calls: WireCall[],
    runs: WireRun[],
    cells: WireCell[] = [],
    notebooks: string[] = [],
  ): void {
    const known = this.hosts.get(hostId);
    const host: HostState = {
      calls: new Set(calls.filter((c) => c.tool === "python" && !c.ended).map((c) => c.callId)),
      runs: new Set(runs.filter((r) => r.status === "running").map((r) => r.id)),
      cellRuns: known?.cellRuns ?? new Map(),
    };
    this.hosts.set(hostId, host);
    // The files it touched before this hub came: listed as if their events had been seen.
    for (const path of notebooks) this.file(hostId, path);
    const running = new Map(cells.filter((c) => c.endedAt === undefined).map((c) => [c.cellRun, c]));
    if (known) {
      // Events were dropped: what ran is unknown, but for the cells the host says still run. The
      // others marked running go idle, files are read again, sessions asked again.
      for (const [n, run] of host.cellRuns)
        if (!running.has(n)) {
          this.ended(run, undefined);
          host.cellRuns.delete(n);
        }
      for (const f of this.files.values())
        if (f.hosts.has(hostId)) {
          // A plan's end may be among the dropped events: its cells are no longer marked waiting.
          this.plan(hostId, f, []);
          f.live.clear();
          for (const id of this.runningIn(f)) f.live.add(id);
          this.schedule(f);
        }
      for (const s of this.sessions.values()) if (s.hostId === hostId) s.stale = true;
    }
    for (const c of running.values())
      if (!host.cellRuns.has(c.cellRun))
        this.started(hostId, host, {
          type: "cell-started",
          cellRun: c.cellRun,
          key: c.key,
          code: c.code,
          ...(c.cellId ? { cellId: c.cellId } : {}),
          seq: 0,
          at: c.startedAt,
        });
    this.sessionList(hostId, sessions);
  }

  /** A fresh list of a host's sessions: each python session has its notebook. */
  sessionList(hostId: string, sessions: WireSession[]): void {
    for (const s of sessions)
      if (s.key.kind === "python" || s.key.kind === "named") this.session(hostId, s.key);
    this.sync(hostId);
  }

  event(hostId: string, e: StampedEvent): void {
    const host = this.hosts.get(hostId);
    if (!host || this.closed) return;
    switch (e.type) {
      case "notebook-opened":
        this.file(hostId, e.path);
        return;
      case "cells-queued":
        this.plan(hostId, this.file(hostId, e.path), e.cellIds);
        return;
      case "notebook-saved": {
        const f = this.file(hostId, e.path);
        const running = this.runningIn(f);
        for (const id of e.cellIds) if (!running.has(id)) f.live.delete(id);
        this.schedule(f);
        return;
      }
      case "session": {
        const k = e.key;
        if (k.kind === "notebook" && e.change === "idle") {
          // The run's last save is written before its session goes idle: the file has every output.
          const f = this.files.get(k.path);
          if (f) {
            f.live.clear();
            this.schedule(f);
          }
        }
        if (k.kind !== "python" && k.kind !== "named") return;
        const s = this.session(hostId, k);
        // A call's turn and its queue change nothing in the kernel: the cells come by their events.
        if (!QUEUE_CHANGES.has(e.change)) s.stale = true;
        this.sync(hostId);
        return;
      }
      case "call-started":
        if (e.tool === "python") host.calls.add(e.callId);
        return;
      case "call-ended":
        host.calls.delete(e.callId);
        this.sync(hostId);
        return;
      case "run-backgrounded":
        host.runs.add(e.runId);
        return;
      case "run-ended":
        host.runs.delete(e.runId);
        this.sync(hostId);
        return;
      case "cell-started":
        this.started(hostId, host, e);
        return;
      case "cell-output": {
        const run = host.cellRuns.get(e.cellRun);
        if (run) this.output(run, e.output);
        return;
      }
      case "cell-ended": {
        const run = host.cellRuns.get(e.cellRun);
        host.cellRuns.delete(e.cellRun);
        if (run) this.ended(run, e.executionCount);
        return;
      }
    }
  }

  /** A host went away: its sessions' notebooks close, and the files no live host touched. */
  hostRemoved(hostId: string): void {
    const host = this.hosts.get(hostId);
    this.hosts.delete(hostId);
    if (host) for (const run of host.cellRuns.values()) this.ended(run, undefined);
    for (const f of this.files.values()) this.plan(hostId, f, []);
    for (const [k, s] of this.sessions)
      if (s.hostId === hostId) {
        this.sessions.delete(k);
        this.closeNotebook(s);
      }
    for (const f of this.files.values()) {
      f.hosts.delete(hostId);
      if (f.hosts.size === 0) this.forget(f);
    }
  }

  /** The page forgets the notebook. */
  private closeNotebook(t: Tracked): void {
    if (t.shown) this.options.tell({ kind: "notebook-closed", path: t.path });
    t.shown = false;
  }

  close(): void {
    this.closed = true;
    for (const f of this.files.values()) clearTimeout(f.timer);
    for (const w of this.watchers.values()) w.watcher?.close();
    this.watchers.clear();
  }

  // ── files ──────────────────────────────────────────────────────────────────────────────────────

  private file(hostId: string, path: string): FileNotebook {
    let f = this.files.get(path);
    if (!f) {
      f = {
        path,
        title: basename(path),
        model: new NotebookModel(path),
        shown: false,
        displays: new Map(),
        hosts: new Set(),
        live: new Set(),
        queued: new Map(),
        again: false,
      };
      this.files.set(path, f);
      this.watchFile(path);
      this.schedule(f, 0);
    }
    f.hosts.add(hostId);
    return f;
  }

  private forget(f: FileNotebook): void {
    clearTimeout(f.timer);
    this.files.delete(f.path);
    const dir = dirname(f.path);
    const w = this.watchers.get(dir);
    w?.names.delete(basename(f.path));
    if (w && w.names.size === 0) {
      w.watcher?.close();
      this.watchers.delete(dir);
    }
    this.closeNotebook(f);
  }

  /** Watches the file's folder (a save renames a new file over the old one, so the file's own watch would end). */
  private watchFile(path: string): void {
    const dir = dirname(path);
    let w = this.watchers.get(dir);
    if (!w) {
      w = { names: new Set() };
      this.watchers.set(dir, w);
      try {
        const names = w.names;
        w.watcher = watch(dir, (_event, name) => {
          if (name === null) {
            for (const n of names) this.changed(`${dir}/${n}`);
          } else if (names.has(name.toString())) this.changed(`${dir}/${name}`);
        });
        w.watcher.on("error", () => {});
      } catch {
        // not watchable: the tool's and runs' events still read it
      }
    }
    w.names.add(basename(path));
  }

  private changed(path: string): void {
    const f = this.files.get(path) ?? this.files.get(path.replace(/\/\/+/g, "/"));
    if (f) this.schedule(f);
  }

  /** Reads the file once the changes of the next settleMs are in (one read for a burst). */
  private schedule(f: FileNotebook, ms = this.options.settleMs ?? 30): void {
    if (this.closed) return;
    if (f.reading) {
      f.again = true;
      return;
    }
    if (f.timer) return;
    f.timer = setTimeout(() => {
      f.timer = undefined;
      f.reading = this.read(f)
        .catch(() => {
          // what could not be read or diffed stays as shown; the next change reads again
        })
        .finally(() => {
          f.reading = undefined;
          if (f.again) {
            f.again = false;
            this.schedule(f, 0);
          }
        });
    }, ms);
  }

  private async read(f: FileNotebook): Promise<void> {
    let content: string;
    try {
      content = await readRealFile(f.path);
    } catch (err) {
      f.problem = (err as NodeJS.ErrnoException).code ?? String(err);
      // Gone (deleted, moved away, or replaced by a link or something not a file): the page
      // forgets it; it comes back if the file does.
      if (this.files.get(f.path) === f && (err instanceof OutsideRootsError || GONE.has(f.problem)))
        this.closeNotebook(f);
      return;
    }
    if (this.files.get(f.path) !== f) return;
    const parsed = parseNotebook(content);
    if ("error" in parsed) {
      f.problem = parsed.error;
      return;
    }
    f.problem = undefined;
    if (!f.shown) {
      // Cells that run now started before the page had the file: they start with no outputs (as
      // their run's own do), marked running, and their outputs come from the events from now on.
      const running = this.runningIn(f);
      const cells = parsed.cells.map((c) => (running.has(c.id) ? { ...c, outputs: [] } : c));
      this.show(f, cells, parsed.language);
      for (const id of running) this.send(f, { kind: "cell-running", path: f.path, id, state: "running" });
      for (const id of f.queued.keys())
        if (!running.has(id)) this.send(f, { kind: "cell-running", path: f.path, id, state: "queued" });
      return;
    }
    for (const m of diffCells(f.path, f.model.cells, parsed.cells, f.live)) this.send(f, m);
  }

  /**
   * A host's run plans `cellIds` in this file (replacing what that host planned there): those not
   * running are marked waiting, and the host's earlier ones that are neither planned nor running go
   * back to idle (a run that stopped before them).
   */
  private plan(hostId: string, f: FileNotebook, cellIds: string[]): void {
    const running = this.runningIn(f);
    const next = new Set(cellIds);
    for (const [id, by] of f.queued)
      if (by === hostId && !next.has(id)) {
        f.queued.delete(id);
        if (!running.has(id)) this.send(f, { kind: "cell-running", path: f.path, id, state: "idle" });
      }
    for (const id of next)
      if (!running.has(id) && !f.queued.has(id)) {
        f.queued.set(id, hostId);
        this.send(f, { kind: "cell-running", path: f.path, id, state: "queued" });
      }
  }

  /** The ids of the notebook's cells that run now (any host). */
  private runningIn(t: Tracked): Set<string> {
    const ids = new Set<string>();
    for (const h of this.hosts.values())
      for (const r of h.cellRuns.values()) if (r.notebook === t) ids.add(r.cellId);
    return ids;
  }

  // ── python sessions ────────────────────────────────────────────────────────────────────────────

  private session(hostId: string, key: SessionKey): SessionNotebook {
    const path = `session:${hostId}:${keyText(key)}`;
    let s = this.sessions.get(path);
    if (!s) {
      s = {
        path,
        title:
          key.kind === "python"
            ? `python session ${key.sessionId}`
            : `named session ${(key as { name: string }).name}`,
        model: new NotebookModel(path),
        shown: false,
        displays: new Map(),
        hostId,
        key,
        stale: true,
        asking: false,
        started: 0,
      };
      this.sessions.set(path, s);
      // Shown at once (empty, or growing from the events) until the host's export comes.
      this.show(s, []);
    }
    return s;
  }

  /** Asks the host for the notebooks of its stale sessions, when none of its python calls is under way. */
  private sync(hostId: string): void {
    const host = this.hosts.get(hostId);
    if (!host || host.calls.size > 0 || host.runs.size > 0) return;
    for (const s of this.sessions.values()) {
      if (s.hostId !== hostId || !s.stale || s.asking) continue;
      s.asking = true;
      const started = s.started;
      this.options
        .act(hostId, { action: "export", key: s.key })
        .then(
          (r) => {
            s.asking = false;
            if (this.sessions.get(s.path) !== s) return;
            // A cell started meanwhile: the export may not hold it; the next quiet moment asks again.
            if (s.started !== started) return this.sync(hostId);
            // A host that cannot export (an older nbagent): the cells grow from the events only.
            s.stale = false;
            if (r?.kind !== "exported") return;
            const read = cellsOfFile(r.notebook);
            if ("error" in read) return;
            for (const m of diffCells(s.path, s.model.cells, read.cells)) this.send(s, m);
          },
          () => {
            s.asking = false;
          },
        )
        .catch(() => {
          // an export that could not be taken in: the cells stay as the events made them
        });
    }
  }

  // ── live runs ──────────────────────────────────────────────────────────────────────────────────

  private started(hostId: string, host: HostState, e: StampedEvent & { type: "cell-started" }): void {
    const key = e.key;
    let run: Run | undefined;
    if (key.kind === "notebook" && e.cellId) {
      const f = this.file(hostId, key.path);
      f.queued.delete(e.cellId);
      f.live.add(e.cellId);
      run = { notebook: f, cellId: e.cellId };
      // A run starts a cell with no outputs (Jupyter clears them), then marks it running.
      this.send(f, { kind: "outputs-cleared", path: f.path, id: e.cellId });
    } else if (key.kind === "python" || key.kind === "named") {
      const s = this.session(hostId, key);
      s.started++;
      // The id export_notebook gives the cell at this place (tools/python/session-notebook.ts).
      const cell: ViewCell = {
        id: `cell-${s.model.cells.length + 1}`,
        cell_type: "code",
        source: e.code,
        outputs: [],
        execution_count: null,
      };
      this.send(s, { kind: "cell-inserted", path: s.path, index: s.model.cells.length, cell });
      run = { notebook: s, cellId: cell.id };
    }
    if (!run) return;
    host.cellRuns.set(e.cellRun, run);
    this.forgetDisplays(run.notebook, run.cellId);
    this.send(run.notebook, {
      kind: "cell-running",
      path: run.notebook.path,
      id: run.cellId,
      state: "running",
    });
  }

  private ended(run: Run, executionCount: number | null | undefined): void {
    const { notebook: t, cellId: id } = run;
    this.send(t, {
      kind: "cell-running",
      path: t.path,
      id,
      state: "idle",
      ...(executionCount !== undefined ? { execution_count: executionCount } : {}),
    });
  }

  private output(run: Run, o: CellOutput): void {
    const { notebook: t, cellId: id } = run;
    const path = t.path;
    switch (o.kind) {
      case "stream": {
        const skipped =
          o.skippedLines > 0 ? `[… ${o.skippedLines} lines not shown here: the viewer fell behind …]\n` : "";
        this.send(t, {
          kind: "output-appended",
          path,
          id,
          output: { output_type: "stream", name: o.name, text: skipped + o.text },
        });
        this.capStream(t, id);
        return;
      }
      case "clear":
        this.send(t, { kind: "outputs-cleared", path, id, ...(o.wait ? { wait: true } : {}) });
        if (!o.wait) this.forgetDisplays(t, id);
        return;
      case "error": {
        // An event from an older host has only the text: the output is made from what there is.
        const output = canonicalOutput({ output_type: "error", ...o, traceback: o.traceback ?? [o.text] });
        if (output) this.send(t, { kind: "output-appended", path, id, output });
        return;
      }
      case "display": {
        const output =
          canonicalOutput(o.output) ??
          ({
            output_type: "display_data",
            data: { "text/plain": String(o.text ?? "") },
            metadata: {},
          } as const);
        if (output.output_type !== "display_data" && output.output_type !== "execute_result") return;
        if (o.update) {
          for (const at of o.displayId ? (t.displays.get(o.displayId) ?? []) : []) {
            const cell = t.model.cells[t.model.indexOf(at.cellId)];
            const was = cell?.outputs[at.index];
            if (!was || was.output_type === "stream" || was.output_type === "error") continue;
            // The update keeps the output's type (an execute_result stays one, with its count).
            const replaced: ViewOutput = { ...was, data: output.data, metadata: output.metadata ?? {} };
            this.send(t, { kind: "output-replaced", path, id: at.cellId, index: at.index, output: replaced });
          }
          return;
        }
        if (this.send(t, { kind: "output-appended", path, id, output }) && o.displayId) {
          const cell = t.model.cells[t.model.indexOf(id)];
          const list = t.displays.get(o.displayId) ?? [];
          list.push({ cellId: id, index: cell.outputs.length - 1 });
          t.displays.set(o.displayId, list);
        }
        return;
      }
    }
  }

  /** A stream that grew past STREAM_CAP keeps its last STREAM_KEEP characters, and says how many lines went. */
  private capStream(t: Tracked, id: string): void {
    const cell = t.model.cells[t.model.indexOf(id)];
    const index = cell ? cell.outputs.length - 1 : -1;
    const last = cell?.outputs[index];
    if (last?.output_type !== "stream") return;
    const text = joinSource(last.text);
    if (text.length <= STREAM_CAP) return;
    let cut = text.length - STREAM_KEEP;
    const nl = text.indexOf("\n", cut);
    if (nl >= 0 && nl < text.length - 1) cut = nl + 1;
    let lines = 0;
    for (let i = 0; i < cut; i++) if (text.charCodeAt(i) === 10) lines++;
    this.send(t, {
      kind: "output-replaced",
      path: t.path,
      id,
      index,
      output: {
        ...last,
        text: `[… ${lines} earlier lines not shown here: the notebook file or the call's result has them …]\n${text.slice(cut)}`,
      },
    });
  }

  private forgetDisplays(t: Tracked, cellId: string): void {
    for (const [d, list] of t.displays) {
      const rest = list.filter((x) => x.cellId !== cellId);
      if (rest.length) t.displays.set(d, rest);
      else t.displays.delete(d);
    }
  }

  // ── messages ───────────────────────────────────────────────────────────────────────────────────

  private show(t: Tracked, cells: ViewCell[], language?: string): void {
    t.model.apply({ kind: "notebook", path: t.path, cells, ...(language ? { language } : {}) });
    t.shown = true;
    this.options.tell(this.snapshot(t));
  }

  /** Applies a patch to the notebook's model and passes it on; false when the model refused it. */
  private send(t: Tracked, message: ViewMessage): boolean {
    if (!t.shown) return false;
    const change = t.model.apply(message);
    if (change.kind === "rejected") return false;
    this.options.tell(message);
    return true;
  }

  private snapshot(t: Tracked): ViewMessage {
    const session: SessionRef | undefined =
      "key" in t
        ? {
            hostId: (t as SessionNotebook).hostId,
            key: (t as SessionNotebook).key as unknown as Record<string, unknown>,
          }
        : undefined;
    const running = t.model.cells.filter((c) => c.state === "running").map((c) => c.id);
    const queued = t.model.cells.filter((c) => c.state === "queued").map((c) => c.id);
    return {
      kind: "notebook",
      path: t.path,
      cells: t.model.cells.map(viewCell),
      language: t.model.language,
      title: t.title,
      ...(session ? { session } : {}),
      ...(running.length ? { running } : {}),
      ...(queued.length ? { queued } : {}),
    };
  }
}

function viewCell(c: ModelCell): ViewCell {
  return {
    id: c.id,
    cell_type: c.cell_type,
    source: c.source,
    ...(c.cell_type === "code" ? { outputs: c.outputs, execution_count: c.execution_count } : {}),
    ...(c.attachments ? { attachments: c.attachments } : {}),
  };
}

/** Read failures that mean the notebook is no longer at its path. */
const GONE = new Set(["ENOENT", "ENOTDIR", "ELOOP", "not-a-file"]);

/**
 * The notebook at its real path (the notebook tool reports real paths), and only there: code the
 * agent ran may replace the file with a link to another file of the user's, or with a FIFO that
 * would hold the read for good; the path is opened without following a link to anywhere else, and
 * only a regular file is read (docs/view.md "Notebooks in the view").
 */
async function readRealFile(path: string): Promise<string> {
  const { handle } = await openFileWithin(path, [path], constants.O_RDONLY, (st) => {
    if (!st.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: "not-a-file" });
  });
  try {
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}
