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
}

function countNewlines(text: string, from = 0, to = text.length): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/** The first `max` UTF-16 units of `text`, never splitting a surrogate pair. */
export function prefixChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && (text.charCodeAt(max - 1) & 0xfc00) === 0xd800 ? max - 1 : max;
  return text.slice(0, end);
}

/** Growing index-based queue (array shifts would be quadratic on many short lines). */
class LineQueue {
  items: ViewLine[] = [];
  start = 0;
  bytes = 0;

  get length(): number {
    return this.items.length - this.start;
  }

  first(): ViewLine | undefined {
    return this.items[this.start];
  }

  push(line: ViewLine): void {
    this.items.push(line);
    this.bytes += line.stored;
  }

  /** Drops lines from the front while the rest still hold `keep` bytes. */
  trim(keep: number): void {
    while (this.length > 1 && this.bytes - this.items[this.start].stored >= keep) {
      this.bytes -= this.items[this.start].stored;
      this.start++;
    }
    if (this.start > 1024 && this.start * 2 > this.items.length) {
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
  }

  list(): ViewLine[] {
    return this.items.slice(this.start);
  }
}

interface LongLine {
  n: number;
  text: string;
  chars: number;
  bytes: number;
  important: boolean;
}

export class CellView {
  private lines = 0;
  private bytes = 0;
  private importantBytes = 0;
  private head: ViewLine[] = [];
  private headBytes = 0;
  private tail = new LineQueue();
  private marks = new LineQueue();
  /** Raw text after the last line break (a later `\r` may still overwrite it). */
  private pending = "";
  private pendingImportant = false;
  /** A line longer than `keep` characters, streaming to the artifact. */
  private long?: LongLine;
  private lastStream?: ChunkKind;
  private firstArtifactLine: number;
  private clears = 0;

  constructor(
    private readonly log: ArtifactLog,
    private readonly keep: number,
  ) {
    this.firstArtifactLine = log.nextLine;
  }

  /** Adds raw text (ANSI codes and `\r` are handled here). */
  push(text: string, kind: ChunkKind): void {
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
    if (!this.log.atLineStart) this.log.write("\n");
    this.log.write(`${marker}\n`);
    this.lines = 0;
    this.bytes = 0;
    this.importantBytes = 0;
    this.head = [];
    this.headBytes = 0;
    this.tail = new LineQueue();
    this.marks = new LineQueue();
    this.lastStream = undefined;
    this.firstArtifactLine = this.log.nextLine;
    this.clears++;
  }

  /** Bytes of the view (for the budget), and of its important lines. */
  size(): { bytes: number; important: number } {
    const virtual = this.virtualLine();
    return {
      bytes: this.bytes + (virtual?.bytes ?? 0),
      important: this.importantBytes + (virtual?.important ? virtual.bytes : 0),
    };
  }

  /** What to show within `share` bytes, `reserved` of them for important lines. */
  render(share: number, reserved: number): CellRender {
    const virtual = this.virtualLine();
    const lines = this.lines + (virtual ? 1 : 0);
    const bytes = this.bytes + (virtual?.bytes ?? 0);
    const tail = this.tail.list();
    if (virtual) tail.push(virtual);
    const shown = selectLines(
      { head: this.head, tail, marks: this.marks.list(), lines, bytes },
      share,
      reserved,
    );
    const cut = shown.length < lines || shown.some((l) => l.cutChars > 0);
    return { lines, bytes, shown, cut, firstArtifactLine: this.firstArtifactLine, clears: this.clears };
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
    this.log.write(text, size);
  }

  private finishLong(): void {
    const long = this.long!;
    this.long = undefined;
    this.log.write("\n", 1);
    long.bytes += 1;
    this.bytes += long.bytes;
    if (long.important) this.importantBytes += long.bytes;
    this.lines++;
    this.addLine({
      n: long.n,
      text: long.text,
      chars: long.chars,
      bytes: long.bytes,
      stored: Buffer.byteLength(long.text) + 1,
      important: long.important,
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
    this.log.write(text, size);
    this.bytes += size;
    if (important) this.importantBytes += size;
    const count = countNewlines(text);
    const first = this.lines + 1;
    this.lines += count;
    let from = 0;
    let n = first;
    // Once the head is full only the last lines can be shown: skip splitting the middle of a flood.
    if (!important && this.headBytes >= this.keep && text.length > 4 * this.keep) {
      from = text.lastIndexOf("\n", text.length - 2 * this.keep - 1) + 1;
      n = first + countNewlines(text, 0, from);
    }
    while (from < text.length) {
      const nl = text.indexOf("\n", from);
      const raw = text.slice(from, nl);
      from = nl + 1;
      const kept = prefixChars(raw, this.keep);
      const bytes = Buffer.byteLength(raw) + 1;
      this.addLine({
        n: n++,
        text: kept,
        chars: raw.length,
        bytes,
        stored: kept === raw ? bytes : Buffer.byteLength(kept) + 1,
        important,
      });
    }
  }

  private addLine(line: ViewLine): void {
    if (this.headBytes < this.keep && this.tail.length === 0) {
      this.head.push(line);
      this.headBytes += line.stored;
      return;
    }
    this.tail.push(line);
    this.tail.trim(this.keep);
    if (line.important) {
      this.marks.push(line);
      this.marks.trim(this.keep);
    }
  }
}
