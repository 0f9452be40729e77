/**
 * One cell's output as the model sees it (docs/output.md): the text since the cell's last
 * clear_output, sanitised line by line, counted (lines, bytes), and kept in bounded memory: the
 * first lines (head), the last lines (tail) and the important lines (tracebacks, notices). Every
 * byte also goes to the call's artifact, so each view line has a known artifact line.
 *
 * Memory is bounded whatever the volume: head, tail and important lines each hold about `keep`
 * bytes, a line keeps at most `keep` characters (a longer one streams to the artifact and is
 * counted), and a partial line overwritten by `\r` keeps only its last state.
 */
import type { ArtifactLog } from "./artifact-log.js";
import {
  countLines,
  eachTextRun,
  linesFromBack,
  linesFromFront,
  mergeInto,
  prefixChars,
  type Run,
  RunQueue,
  runLines,
  splitRuns,
  textRuns,
} from "./line-runs.js";
import { sanitise } from "./sanitise.js";
import { type ShownLine, selectLines, type ViewLine } from "./select.js";

export type ChunkKind = "stdout" | "stderr" | "error" | "notice" | "display";

export interface CellRender {
  /** Lines and UTF-8 bytes of the view (everything since the last clear). */
  lines: number;
  bytes: number;
  /** Lines shown, in order; a gap in `n` is a cut. */
  shown: ShownLine[];
  /** Something was not shown: a line left out or a line cut. */
  cut: boolean;
  /** Artifact line of view line 1. */
  firstArtifactLine: number;
  /** How many times the view was cleared (clear_output). */
  clears: number;
  /**
   * Artifact lines of this view's part of the artifact beyond `lines` (negative when an updated
   * display got shorter): the artifact keeps every state of an updated display (docs/output.md).
   */
  artifactExtra: number;
  /** View lines before this one are at `firstArtifactLine + n - 1` in the artifact; later ones may not be. */
  linearBefore: number;
  /** Displays replaced in place (update_display_data) since the view began, ever increasing. */
  edits: number;
  /** `[edit, line]`: the first view line any edit after `edit - 1` changed is the first `line` with a larger edit. */
  editedLines: [number, number][];
}

/** Where a display with a display_id is in the view: its lines (none when its text was empty). */
interface DisplaySlot {
  n: number;
  count: number;
  bytes: number;
}

/** Display slots one view keeps (oldest forgotten first: an update of a forgotten one is new output). */
export const MAX_DISPLAY_SLOTS = 10_000;

function countNewlines(text: string, from = 0, to = text.length): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * A copy of `text` that does not keep a larger string alive (V8 shares the parent of a slice, so a
 * kept 100-byte slice of a 100 MB chunk would keep the chunk).
 */
function own(text: string): string {
  return text.length < 16 ? text : Buffer.from(text, "utf8").toString("utf8");
}

interface LongLine {
  n: number;
  text: string;
  chars: number;
  bytes: number;
  important: boolean;
}

export class CellView {
  /** Runs hold at most this many bytes (a quarter of what is kept), so trimming stays fine-grained. */
  private readonly maxRun: number;
  private lines = 0;
  private bytes = 0;
  private importantBytes = 0;
  private head: Run[] = [];
  private headBytes = 0;
  private tail = new RunQueue();
  /** Copies of the important runs (the head may be compacted, the tail trimmed). */
  private marks = new RunQueue();
  /** Raw text after the last line break (a later `\r` may still overwrite it). */
  private pending = "";
  private pendingImportant = false;
  /** A line longer than `keep` characters, streaming to the artifact. */
  private long?: LongLine;
  private lastStream?: ChunkKind;
  private firstArtifactLine: number;
  private clears = 0;
  private slots = new Map<string, DisplaySlot[]>();
  private slotCount = 0;
  /** Displays with an id were forgotten past MAX_DISPLAY_SLOTS (since the last clear). */
  forgotSlots = false;
  private artifactExtra = 0;
  private linearBefore = Number.POSITIVE_INFINITY;
  private edits = 0;
  /** Increasing in both edit and line: the lowest line changed by any edit after a given one. */
  private editedLines: [number, number][] = [];

  constructor(
    private readonly log: ArtifactLog,
    private readonly keep: number,
  ) {
    this.firstArtifactLine = log.nextLine;
    this.maxRun = Math.max(64, Math.floor(keep / 4));
  }

  /** Adds raw text (ANSI codes and `\r` are handled here); a display's `displayId` makes it replaceable. */
  push(text: string, kind: ChunkKind, displayId?: string): void {
    if (displayId !== undefined && kind === "display") {
      this.breakLine();
      const lines = this.lines;
      const bytes = this.bytes;
      this.push(text, kind);
      this.addSlot(displayId, { n: lines + 1, count: this.lines - lines, bytes: this.bytes - bytes });
      return;
    }
    if (text.length === 0) return;
    // Jupyter shows a display, an error, or a stream of the other name as a new output: a new line.
    const stream = kind === "stdout" || kind === "stderr";
    if (kind === "display" || kind === "error" || (stream && this.lastStream && this.lastStream !== kind))
      this.breakLine();
    if (stream) this.lastStream = kind;
    else if (kind !== "notice") this.lastStream = undefined;
    this.feed(
      kind === "display" && !text.endsWith("\n") ? `${text}\n` : text,
      kind === "error" || kind === "notice",
    );
  }

  /**
   * A chunk whose whole text goes to the artifact while the view shows a shorter form of it (a
   * traceback with library frames folded): `shorter` gets the artifact lines the whole text took.
   */
  pushAside(full: string, shorter: (first: number, last: number) => string, kind: ChunkKind): void {
    this.breakLine();
    this.lastStream = undefined;
    if (!this.log.atLineStart) this.log.write("\n");
    const whole = sanitise(full.endsWith("\n") ? full : `${full}\n`);
    const first = this.log.nextLine;
    const lines = countNewlines(whole);
    this.log.write(whole, Buffer.byteLength(whole), lines);
    const raw = shorter(first, first + lines - 1);
    const shown = sanitise(raw.endsWith("\n") ? raw : `${raw}\n`);
    const from = this.lines + 1;
    this.unlogged = true;
    try {
      this.feed(shown, kind === "error" || kind === "notice");
      this.breakLine();
    } finally {
      this.unlogged = false;
    }
    // the artifact holds the whole text where the view has the shorter one
    this.artifactExtra += lines - (this.lines + 1 - from);
    this.linearBefore = Math.min(this.linearBefore, from);
  }

  /** While set, what the view takes is not written to the artifact (pushAside wrote its whole form). */
  private unlogged = false;

  /** Ends a partial last line (the cell ended, or its output was cleared). */
  breakLine(): void {
    if (this.long) {
      this.finishLong();
      return;
    }
    if (!this.pending) return;
    const text = sanitise(`${this.pending}\n`);
    const important = this.pendingImportant;
    this.pending = "";
    if (text !== "\n") this.commit(text, important);
  }

  /** clear_output: the view starts over; the artifact keeps what was shown, then `marker`. */
  clear(marker: string): void {
    this.breakLine();
    if (this.lines === 0) return; // nothing shown: nothing to clear
    if (!this.log.atLineStart) this.log.write("\n");
    this.log.write(`${marker}\n`);
    this.lines = 0;
    this.bytes = 0;
    this.importantBytes = 0;
    this.head = [];
    this.headBytes = 0;
    this.tail = new RunQueue();
    this.marks = new RunQueue();
    this.lastStream = undefined;
    this.firstArtifactLine = this.log.nextLine;
    this.clears++;
    this.slots.clear();
    this.slotCount = 0;
    this.forgotSlots = false;
    this.artifactExtra = 0;
    this.linearBefore = Number.POSITIVE_INFINITY;
    this.editedLines = [];
  }

  private addSlot(displayId: string, slot: DisplaySlot): void {
    const list = this.slots.get(displayId);
    if (list) list.push(slot);
    else this.slots.set(displayId, [slot]);
    if (++this.slotCount <= MAX_DISPLAY_SLOTS) return;
    const [oldest, dropped] = this.slots.entries().next().value as [string, DisplaySlot[]];
    this.slots.delete(oldest);
    this.slotCount -= dropped.length;
    this.forgotSlots = true;
  }

  /** This view shows a display with this id (its text may have been empty). */
  hasDisplay(displayId: string): boolean {
    return this.slots.has(displayId);
  }

  /**
   * update_display_data: every display of this view with `displayId` shows `text` instead, in place
   * (as Jupyter shows it); later lines move by the difference. The artifact keeps the old text where
   * it was (`artifactExtra` counts the difference). False when no display has that id.
   */
  replaceDisplay(displayId: string, text: string): boolean {
    const list = this.slots.get(displayId);
    if (!list) return false;
    const clean = text ? sanitise(text.endsWith("\n") ? text : `${text}\n`) : "";
    for (const slot of list) this.replaceSlot(slot, clean);
    return true;
  }

  /** Notes `lines` artifact lines written for this view that are no view line (an update's new state). */
  private noteArtifactLines(lines: number): void {
    this.artifactExtra += lines;
    this.linearBefore = Math.min(this.linearBefore, this.lines + 1);
  }

  /**
   * Writes the new state of an updated display to the artifact after `marker` (the artifact keeps
   * every state); skipped while a long line is still being written there.
   */
  logUpdate(marker: string, text: string): void {
    if (this.long || !this.log.atLineStart) return;
    const clean = sanitise(`${marker}\n${text.endsWith("\n") || !text ? text : `${text}\n`}`);
    const lines = countNewlines(clean);
    this.log.write(clean, Buffer.byteLength(clean), lines);
    this.noteArtifactLines(lines);
  }

  private replaceSlot(slot: DisplaySlot, text: string): void {
    const { n, count } = slot;
    const newCount = countNewlines(text);
    const newBytes = Buffer.byteLength(text);
    const delta = newCount - count;
    const end = n + count;
    // where the display's lines are kept: the head (it holds every line before it), the tail (it
    // holds every line after it), or neither (a flood's middle: only counted)
    const head = splitRuns(this.head, n, end);
    const tail = splitRuns(this.tail.list(), n, end);
    const headHolds = head.before === n;
    const tailHolds = !headHolds && (tail.back.length > 0 ? tail.back[0].n : this.lines + 1) === end;
    const fresh =
      newCount > 0 && (headHolds || tailHolds) ? textRuns(text, n, this.maxRun, this.keep, false) : [];
    const shift = (r: Run) => {
      if (delta !== 0 && r.n >= end) r.n += delta;
    };
    this.head = [...head.front, ...(headHolds ? fresh : []), ...head.back];
    this.head.forEach(shift);
    this.headBytes = this.head.reduce((sum, r) => sum + r.stored, 0);
    const tailRuns = [...tail.front, ...(tailHolds ? fresh : []), ...tail.back];
    tailRuns.forEach(shift);
    this.tail = RunQueue.of(tailRuns);
    this.marks.forEach(shift);
    if (this.long && this.long.n >= end) this.long.n += delta;
    if (delta !== 0)
      for (const list of this.slots.values())
        for (const other of list) if (other !== slot && other.n >= end) other.n += delta;
    this.lines += delta;
    this.bytes += newBytes - slot.bytes;
    this.artifactExtra -= delta;
    // the artifact still has the first state at these lines: later lines move only when the count changed
    if (delta !== 0) this.linearBefore = Math.min(this.linearBefore, n);
    slot.count = newCount;
    slot.bytes = newBytes;
    this.edits++;
    while (this.editedLines.length > 0 && this.editedLines[this.editedLines.length - 1][1] >= n)
      this.editedLines.pop();
    this.editedLines.push([this.edits, n]);
  }

  /** Bytes of the view (for the budget), and of its important lines. */
  size(): { bytes: number; important: number } {
    const virtual = this.virtualLine();
    return {
      bytes: this.bytes + (virtual?.bytes ?? 0),
      important: this.importantBytes + (virtual?.important ? virtual.bytes : 0),
    };
  }

  /**
   * Keeps only what a share of `share` bytes (`reserved` of them for important lines) can show: a
   * finished cell's share only shrinks as later cells add output, so a call with many cells holds
   * about one budget in all, not one per cell.
   */
  compact(share: number, reserved: number): void {
    if (this.bytes <= share) return;
    let kept = 0;
    let n = 0;
    while (n < this.head.length && kept < share) kept += this.head[n++].stored;
    if (n < this.head.length) {
      this.head = this.head.slice(0, Math.max(1, n));
      this.headBytes = kept;
    }
    this.tail.trim(share);
    this.marks.trim(reserved);
  }

  /** What to show within `share` bytes, `reserved` of them for important lines. */
  render(share: number, reserved: number): CellRender {
    const virtual = this.virtualLine();
    const lines = this.lines + (virtual ? 1 : 0);
    const bytes = this.bytes + (virtual?.bytes ?? 0);
    const complete = countLines(this.head) + countLines(this.tail.list()) === this.lines;
    // only as many lines as the share can show, from each end
    const budget = complete && bytes <= share ? Number.POSITIVE_INFINITY : share;
    const head = linesFromFront(this.head, budget);
    const tail = linesFromBack(this.tail.list(), budget - (virtual?.stored ?? 0));
    if (virtual) tail.push(virtual);
    const marks = this.marks.list().flatMap(runLines);
    const shown = selectLines({ head, tail, marks, lines, bytes, complete }, share, reserved);
    const cut = shown.length < lines || shown.some((l) => l.cutChars > 0);
    return {
      lines,
      bytes,
      shown,
      cut,
      firstArtifactLine: this.firstArtifactLine,
      clears: this.clears,
      artifactExtra: this.artifactExtra,
      linearBefore: this.linearBefore,
      edits: this.edits,
      editedLines: this.editedLines.map(([e, l]) => [e, l]),
    };
  }

  private feed(chunk: string, important: boolean): void {
    let data = chunk;
    if (this.long) {
      const nl = data.indexOf("\n");
      this.extendLong(nl < 0 ? data : data.slice(0, nl));
      if (nl < 0) return;
      this.finishLong();
      data = data.slice(nl + 1);
      if (!data) return;
    }
    if (this.pending) {
      data = this.pending + data;
      important ||= this.pendingImportant;
    }
    this.pending = "";
    const lastBreak = data.lastIndexOf("\n");
    if (lastBreak >= 0) {
      const rest = data.slice(lastBreak + 1);
      this.commit(sanitise(rest ? data.slice(0, lastBreak + 1) : data), important);
      data = rest;
    }
    this.pending = data;
    this.pendingImportant = important && data.length > 0;
    if (this.pending.length > this.keep) this.overlong();
  }

  /** The partial line passed `keep` characters: keep only its last `\r` state, or stream it. */
  private overlong(): void {
    const cr = this.pending.lastIndexOf("\r", this.pending.length - 2);
    if (cr >= 0) {
      this.pending = this.pending.slice(cr + 1);
      if (this.pending.length <= this.keep) return;
    }
    const text = sanitise(this.pending);
    this.pending = "";
    this.long = {
      n: this.lines + 1,
      text: prefixChars(text, this.keep),
      chars: 0,
      bytes: 0,
      important: this.pendingImportant,
    };
    this.extendLong(text, true);
  }

  private extendLong(raw: string, clean = false): void {
    const long = this.long!;
    const text = clean ? raw : sanitise(raw);
    const size = Buffer.byteLength(text);
    long.chars += text.length;
    long.bytes += size;
    if (!this.unlogged) this.log.write(text, size);
  }

  private finishLong(): void {
    const long = this.long!;
    this.long = undefined;
    if (!this.unlogged) this.log.write("\n", 1);
    long.bytes += 1;
    this.bytes += long.bytes;
    if (long.important) this.importantBytes += long.bytes;
    this.lines++;
    const stored = Buffer.byteLength(long.text) + 1;
    this.addRun({
      n: long.n,
      count: 1,
      text: `${long.text}\n`,
      stored,
      important: long.important,
      long: { chars: long.chars, bytes: long.bytes },
    });
  }

  /** The partial last line as a line of the view (shown, counted; not yet in the artifact). */
  private virtualLine(): ViewLine | undefined {
    if (this.long) {
      const l = this.long;
      return { ...l, stored: Buffer.byteLength(l.text) + 1 };
    }
    if (!this.pending) return undefined;
    const text = sanitise(this.pending);
    if (!text) return undefined;
    const bytes = Buffer.byteLength(text);
    return {
      n: this.lines + 1,
      text,
      chars: text.length,
      bytes,
      stored: bytes,
      important: this.pendingImportant,
    };
  }

  /** `text`: sanitised whole lines, each ending with a break. */
  private commit(text: string, important: boolean): void {
    const size = Buffer.byteLength(text);
    const count = countNewlines(text);
    if (!this.unlogged) this.log.write(text, size, count);
    this.bytes += size;
    if (important) this.importantBytes += size;
    const first = this.lines + 1;
    this.lines += count;
    if (text.length <= this.maxRun) {
      this.addRun({ n: first, count, text, stored: size, important });
      return;
    }
    let from = 0;
    let n = first;
    // Once the head is full only the last lines can be shown: skip the middle of a flood.
    if (!important && this.headBytes >= this.keep && text.length > 2 * this.keep) {
      from = text.lastIndexOf("\n", text.length - this.keep - 1) + 1;
      n = first + countNewlines(text, 0, from);
    }
    // runs of whole lines (at most maxRun characters); a line longer than `keep` is a run of its own
    eachTextRun(text, from, n, { maxRun: this.maxRun, keep: this.keep }, important, (run) =>
      this.addRun(run),
    );
  }

  private addRun(run: Run): void {
    if (this.headBytes < this.keep && this.tail.length === 0) {
      // the head lives as long as the cell: keep its own copy, not a slice of a large chunk
      const last = this.head[this.head.length - 1];
      if (!last || !mergeInto(last, run, this.maxRun)) this.head.push({ ...run, text: own(run.text) });
      this.headBytes += run.stored;
    } else {
      this.tail.pushMerging(run, this.maxRun);
      this.tail.trim(this.keep);
    }
    if (run.important) {
      this.marks.pushMerging({ ...run, text: own(run.text) }, this.maxRun);
      this.marks.trim(this.keep);
    }
  }

  /** The cell ended: what it keeps is its own copy, so the chunks it was cut from can go. */
  settle(): void {
    this.breakLine();
    const fresh = (run: Run) => {
      run.text = own(run.text);
    };
    this.head.forEach(fresh);
    this.tail.forEach(fresh);
    this.marks.forEach(fresh);
  }
}
