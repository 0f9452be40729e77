/**
 * The record of a python session (docs/python-tool.md, "The session as a notebook"): every cell the
 * session ran, in order, with its outputs as a saved notebook holds them (the same collector as
 * notebook runs: collector.ts) and its execution_count, and every point where the kernel's state
 * was lost (a new kernel, a reset, a restart after a death). It lives in a JSONL file, one entry a
 * line, so memory stays bounded and a named session's record outlives the process:
 *
 *   <root>/sessions/<session>/records/python-<process>-<hash of the key>.jsonl   in-process session
 *   <root>/sessions/<session>/records/named-<hash of the name>.jsonl             named session
 *
 * A folder no kernel is given (as outputs/). An in-process session's record goes with its process
 * (removed on dispose; files left by a crashed process are pruned by age like artifacts); a named
 * session's is appended to by every process that runs it and pruned by age too. One cell's outputs
 * above MAX_CELL_OUTPUT_BYTES are not kept (the entry says how many bytes were left out), and a
 * record past MAX_RECORD_BYTES keeps only the code of further cells. Entries are typed; tools/
 * words them.
 */

import { closeSync, fstatSync, mkdirSync, openSync, statSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import type { JupyterMessage } from "../kernel/types.js";
import { sessionDirName } from "../output/artifacts.js";
import { createHash, randomBytes } from "../sys/crypto.js";
import { lstat, readdir, readFile, unlink } from "../sys/fs-promises.js";
import { CellOutputCollector, DisplayRegistry, type NbOutput } from "./collector.js";

/** One cell's outputs above this (bytes as received) are left out of the record. */
export const MAX_CELL_OUTPUT_BYTES = 4 * 2 ** 20;
/** Past this size a record keeps only the code of further cells. */
export const MAX_RECORD_BYTES = 64 * 2 ** 20;

/** The kernel a record's cells ran in, as it reported itself. */
export interface RecordedKernel {
  kernelspec?: { name: string; display_name: string; language: string };
  language_info?: Record<string, unknown>;
  /** The gateway's id of a named session's kernel. */
  kernelId?: string;
}

/**
 * Why a kernel entry is there: `start` a new kernel (its state is new: the first one, or one after
 * the session's earlier kernel was shut down or lost); `attach` a named session's running kernel
 * joined by a process whose record had nothing yet (state kept); `reset` a deliberate restart;
 * `restart` the kernel was found dead (or died before the code started) and was restarted;
 * `died` the cell before it killed the kernel (`restarted` whether a new one is up); `interrupt`
 * the cell before it did not stop when interrupted and the kernel was restarted.
 */
export type KernelRecordEvent =
  | { kind: "start" }
  | { kind: "attach" }
  /** The python tool's `reset`, or (`by`) a restart asked for through the kernels tool. */
  | { kind: "reset"; by?: "kernels-tool" }
  | { kind: "restart"; reason?: string }
  | { kind: "died"; reason: string; restarted: boolean }
  | { kind: "interrupt" };

export type RecordEntry =
  | ({ type: "kernel"; at: string; event: KernelRecordEvent } & RecordedKernel)
  | {
      type: "cell";
      at: string;
      source: string;
      execution_count: number | null;
      outputs: NbOutput[];
      /** Outputs left out: their size as received, and why. */
      omitted?: { bytes: number; why: "cell-too-large" | "record-full"; limit: number; artifact?: string };
    };

export type RecordedCell = Extract<RecordEntry, { type: "cell" }>;

/**
 * Collects one cell's outputs for the record as a notebook saves them, holding at most
 * MAX_CELL_OUTPUT_BYTES: past it the outputs are dropped and only counted.
 */
export class CellRecording {
  private readonly outputs: NbOutput[] = [];
  private readonly collector: CellOutputCollector;
  private bytes = 0;
  private over = false;

  constructor(
    readonly source: string,
    private readonly limit = MAX_CELL_OUTPUT_BYTES,
  ) {
    // Displays are followed within the cell; an update of an earlier cell's display is not (that
    // cell is already written).
    this.collector = new CellOutputCollector({
      cellKey: "cell",
      outputs: this.outputs,
      registry: new DisplayRegistry(),
      outputsOf: () => undefined,
    });
  }

  /** The outputs went over the limit (they are left out). */
  get tooLarge(): boolean {
    return this.over;
  }

  /** The ExecuteOptions.onIOPub hook. */
  readonly onIOPub = (msg: JupyterMessage): void => {
    this.bytes += messageBytes(msg);
    if (!this.over && this.bytes > this.limit) {
      this.over = true;
      this.outputs.length = 0;
    }
    if (this.over) {
      const count = (msg.content as { execution_count?: unknown }).execution_count;
      if (typeof count === "number") this.collector.executionCount = count;
      return;
    }
    this.collector.handle(msg);
  };

  /** The entry, once the cell's reply came (`artifact`: where the call's whole text output is). */
  finish(executionCount: number | null, artifact?: string): RecordedCell {
    this.collector.replied(undefined, executionCount);
    return {
      type: "cell",
      at: new Date().toISOString(),
      source: this.source,
      execution_count: this.collector.executionCount,
      outputs: this.over ? [] : this.outputs,
      ...(this.over
        ? { omitted: { bytes: this.bytes, why: "cell-too-large" as const, limit: this.limit, artifact } }
        : {}),
    };
  }
}

/** Bytes an output message carries (text and bundle values), counted without copying. */
function messageBytes(msg: JupyterMessage): number {
  const c = msg.content as Record<string, unknown>;
  let n = 0;
  const add = (v: unknown) => {
    if (typeof v === "string") n += v.length;
    else if (Array.isArray(v)) for (const x of v) add(x);
    else if (v && typeof v === "object") for (const x of Object.values(v)) add(x);
  };
  add(c.text);
  add(c.data);
  add(c.traceback);
  return n;
}

/**
 * Where a session's record is and what can be done with it. Appends go through one descriptor,
 * opened (and its folder made) at the first append and kept: each entry is one synchronous
 * `write` of one line with O_APPEND, so it is in the file before `append` returns and stays there
 * when the process is killed, and processes appending to a named session's record do not
 * interleave. A record whose file was removed meanwhile (pruned by another process) is opened anew.
 */
export class SessionRecord {
  private fd?: number;

  constructor(
    readonly path: string,
    /** Removed on dispose (an in-process or per-call session's). */
    readonly transient: boolean,
    /** Told when the descriptor is opened (SessionRecords bounds how many stay open). */
    private readonly onOpen?: (record: SessionRecord) => void,
  ) {}

  /** Nothing recorded yet. */
  isEmpty(): boolean {
    const held = this.held();
    if (held) return held.size === 0;
    try {
      return statSync(this.path).size === 0;
    } catch {
      return true;
    }
  }

  async append(entry: RecordEntry): Promise<void> {
    const size = this.open();
    let e = entry;
    if (e.type === "cell" && e.outputs.length > 0 && size > MAX_RECORD_BYTES) {
      const bytes = JSON.stringify(e.outputs).length;
      e = { ...e, outputs: [], omitted: { bytes, why: "record-full", limit: MAX_RECORD_BYTES } };
    }
    const line = Buffer.from(`${JSON.stringify(e)}\n`, "utf8");
    // One write per line (O_APPEND); a short write (a full disk) is finished, or leaves a torn
    // last line, which read() skips.
    for (let at = 0; at < line.length; ) at += writeSync(this.fd as number, line, at);
  }

  /** The entries in order (a line that does not parse, e.g. one cut by a crash, is skipped). */
  async read(): Promise<RecordEntry[]> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch {
      return [];
    }
    const out: RecordEntry[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        const e = JSON.parse(line) as RecordEntry;
        if (e && (e.type === "cell" || e.type === "kernel")) out.push(e);
      } catch {
        /* a torn line */
      }
    }
    return out;
  }

  /** Closes the descriptor (the next append opens the file again). */
  close(): void {
    const fd = this.fd;
    this.fd = undefined;
    if (fd !== undefined)
      try {
        closeSync(fd);
      } catch {
        /* closed already */
      }
  }

  /** The open file's stats while its descriptor still names the file at `path` (not removed). */
  private held(): { size: number } | undefined {
    if (this.fd === undefined) return undefined;
    try {
      const st = fstatSync(this.fd);
      if (st.nlink > 0) return st;
    } catch {
      /* closed underneath */
    }
    this.close();
    return undefined;
  }

  /** Opens the file for appending if it is not open; answers its size. */
  private open(): number {
    const held = this.held();
    if (held) return held.size;
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    this.fd = openSync(this.path, "a", 0o600);
    this.onOpen?.(this);
    return fstatSync(this.fd).size;
  }
}

const hash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);
const RECORD_FILE_RE = /^(python|named)-[0-9a-z-]+\.jsonl$/;

/** Descriptors of records kept open at once; past it the least recently opened is closed. */
const MAX_OPEN_RECORDS = 16;

/** The records of one runtime's sessions (see the module comment for the layout). */
export class SessionRecords {
  /** This process's part of in-process records' names (made with the first: a read names none). */
  private tokenMade?: string;
  private get token(): string {
    this.tokenMade ??= `${Date.now().toString(36)}-${process.pid}-${randomBytes(3).toString("hex")}`;
    return this.tokenMade;
  }
  private readonly transient = new Set<string>();
  /** One SessionRecord per path, so its descriptor serves every call of the session. */
  private readonly known = new Map<string, SessionRecord>();
  /** Records with an open descriptor, least recently opened first. */
  private readonly opened = new Set<SessionRecord>();

  constructor(private readonly root: string) {}

  private dir(sessionId: string): string {
    return join(this.root, "sessions", sessionDirName(sessionId), "records");
  }

  private readonly onOpen = (record: SessionRecord): void => {
    this.opened.delete(record);
    this.opened.add(record);
    for (const r of this.opened) {
      if (this.opened.size <= MAX_OPEN_RECORDS) break;
      this.opened.delete(r);
      r.close();
    }
  };

  private record(path: string, transient: boolean, keep: boolean): SessionRecord {
    let record = this.known.get(path);
    if (!record) {
      record = new SessionRecord(path, transient, this.onOpen);
      if (keep) this.known.set(path, record);
    }
    if (transient) this.transient.add(path);
    return record;
  }

  /** The record of an in-process python session (session id in a working directory). */
  python(sessionId: string, cwd: string): SessionRecord {
    const name = `python-${this.token}-${hash(JSON.stringify([sessionId, cwd]))}.jsonl`;
    return this.record(join(this.dir(sessionId), name), true, true);
  }

  /** A record for one per-call kernel (removed when the call is done with it: `discard`). */
  perCall(sessionId: string): SessionRecord {
    const name = `python-${this.token}-${randomBytes(8).toString("hex")}.jsonl`;
    return this.record(join(this.dir(sessionId), name), true, false);
  }

  /** The record of a named session (any process's, past and present). */
  named(name: string): SessionRecord {
    return this.record(namedRecordPath(this.root, name), false, true);
  }

  async discard(record: SessionRecord): Promise<void> {
    if (!record.transient) return;
    this.forget(record);
    this.transient.delete(record.path);
    await unlink(record.path).catch(() => {});
  }

  /** Removes this process's in-process records. */
  async dispose(): Promise<void> {
    for (const record of this.known.values()) this.forget(record);
    for (const record of this.opened) this.forget(record);
    await Promise.allSettled([...this.transient].map((p) => unlink(p)));
    this.transient.clear();
  }

  private forget(record: SessionRecord): void {
    record.close();
    this.opened.delete(record);
    if (this.known.get(record.path) === record) this.known.delete(record.path);
  }

  /** Removes record files last written more than maxAgeMs ago (any process's). */
  async prune(maxAgeMs: number, now = Date.now()): Promise<number> {
    const sessions = join(this.root, "sessions");
    let removed = 0;
    for (const name of await readdir(sessions).catch(() => [] as string[])) {
      const dir = join(sessions, name, "records");
      for (const file of await readdir(dir).catch(() => [] as string[])) {
        if (!RECORD_FILE_RE.test(file)) continue;
        const path = join(dir, file);
        try {
          const st = await lstat(path);
          if (!st.isFile() || now - st.mtimeMs <= maxAgeMs) continue;
          await unlink(path);
          removed++;
        } catch {
          /* gone already */
        }
      }
    }
    return removed;
  }
}

/** A named session's record file under a state root (also for a later process: `nbagent sessions export`). */
export function namedRecordPath(root: string, name: string): string {
  return join(root, "sessions", sessionDirName(name), "records", `named-${hash(name)}.jsonl`);
}
