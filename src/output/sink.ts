/**
 * OutputSink (S31): receives an execution's text chunks in arrival order, sanitises them line by
 * line, counts lines and bytes, and keeps only a bounded tail in memory. Once the text passes
 * `maxBytes` it is marked truncated and, when an artifact file was given, the complete sanitised
 * stream is spilled there (what was kept so far first, then every later chunk).
 *
 * Memory stays bounded whatever the volume: the kept tail is whole chunks covering maxBytes (cut
 * exactly only when dumped), a partial line longer than maxBytes is committed as it is, and artifact
 * writes are encoded into one preallocated SPILL_BATCH buffer and written with synchronous `write`s. Synchronous writes are the backpressure: the producer (IOPub
 * callbacks) cannot be paused, so the sink never lets unwritten data pile up behind a stream.
 */
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { sanitise } from "./sanitise.js";

export const DEFAULT_MAX_BYTES = 50 * 1024;
const SPILL_BATCH = 1024 * 1024;
/** Kept chunks smaller than this are merged with the next, so the kept list stays short. */
const MERGE_BELOW = 8 * 1024;

export interface SinkArtifact {
  id: string;
  path: string;
}

export interface OutputSinkOptions {
  /** Bytes of text kept in memory and shown (default 50 KiB). */
  maxBytes?: number;
  /** Where to spill the complete stream once it passes maxBytes (created lazily). */
  artifact?: SinkArtifact;
}

export interface OutputDump {
  /** The visible text: everything, or the tail cut on a UTF-8 and line boundary. */
  text: string;
  truncated: boolean;
  /** Lines in the whole (sanitised) stream. */
  totalLines: number;
  /** Bytes (UTF-8) of the whole sanitised stream. */
  totalBytes: number;
  /** Lines in `text`. */
  outputLines: number;
  /** 1-based number of the first line of `text` within the whole stream. */
  firstLine: number;
  /** Set when the complete stream was spilled to an artifact. */
  artifactId?: string;
  /** Set when writing the artifact failed (it is then incomplete). */
  artifactError?: string;
}

function countNewlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/** Index of the first byte of `buf` at or after `start` that begins a UTF-8 character. */
function utf8Start(buf: Buffer, start: number): number {
  let i = start;
  while (i < buf.length && (buf[i] & 0xc0) === 0x80) i++;
  return i;
}

export class OutputSink {
  readonly maxBytes: number;
  private readonly artifact?: SinkArtifact;
  /** Unsanitised text after the last line break (a `\r` may still overwrite it). */
  private pending = "";
  /** Sanitised text kept in memory: whole chunks (small ones merged), at least maxBytes of them. */
  private tail: string[] = [];
  private tailSizes: number[] = [];
  private tailBytes = 0;
  /** Whether the first char of `tail` starts a line of the stream. */
  private tailAtLineStart = true;
  private bytes = 0;
  private newlines = 0;
  private endsWithNewline = true;
  private truncated = false;
  private fd?: number;
  private spillBuf?: Buffer;
  private spillUsed = 0;
  private spilled = false;
  private artifactError?: string;
  private ended = false;

  constructor(options: OutputSinkOptions = {}) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.artifact = options.artifact;
  }

  /** Adds a chunk of raw text (ANSI codes and `\r` are handled here). */
  push(chunk: string): void {
    if (this.ended || chunk.length === 0) return;
    const data = this.pending ? this.pending + chunk : chunk;
    const lastBreak = data.lastIndexOf("\n");
    if (lastBreak < 0) {
      this.pending = data;
      // A line longer than the budget is committed as is (its later `\r`s are then not applied).
      if (this.pending.length > this.maxBytes) this.flushPending();
      return;
    }
    this.pending = lastBreak + 1 < data.length ? data.slice(lastBreak + 1) : "";
    this.commit(sanitise(lastBreak + 1 < data.length ? data.slice(0, lastBreak + 1) : data));
    if (this.pending.length > this.maxBytes) this.flushPending();
  }

  private flushPending(): void {
    const text = sanitise(this.pending);
    this.pending = "";
    this.commit(text);
  }

  private commit(text: string): void {
    if (text.length === 0) return;
    const size = Buffer.byteLength(text);
    this.bytes += size;
    this.newlines += countNewlines(text);
    this.endsWithNewline = text.charCodeAt(text.length - 1) === 10;
    const last = this.tail.length - 1;
    if (last >= 0 && this.tailSizes[last] < MERGE_BELOW) {
      this.tail[last] += text;
      this.tailSizes[last] += size;
    } else {
      this.tail.push(text);
      this.tailSizes.push(size);
    }
    this.tailBytes += size;
    if (this.spilled) this.spill(text, size);
    if (this.tailBytes > this.maxBytes && !this.truncated) {
      this.truncated = true;
      if (this.artifact) this.startSpill();
    }
    // drop whole chunks from the front while what remains still covers maxBytes
    while (this.tail.length > 1 && this.tailBytes - this.tailSizes[0] >= this.maxBytes) {
      const dropped = this.tail.shift()!;
      this.tailBytes -= this.tailSizes.shift()!;
      this.tailAtLineStart = dropped.charCodeAt(dropped.length - 1) === 10;
    }
  }

  private startSpill(): void {
    const artifact = this.artifact!;
    try {
      mkdirSync(dirname(artifact.path), { recursive: true });
      this.fd = openSync(artifact.path, "w", 0o600);
      this.spilled = true;
      for (const [i, piece] of this.tail.entries()) this.spill(piece, this.tailSizes[i]);
    } catch (err) {
      this.fail(err);
    }
  }

  /** Encodes straight into one preallocated batch buffer (no allocation per chunk). */
  private spill(text: string, size: number): void {
    if (this.fd === undefined) return;
    if (size > SPILL_BATCH - this.spillUsed) this.writeSpill();
    if (size > SPILL_BATCH) {
      this.writeAll(Buffer.from(text, "utf8"));
      return;
    }
    this.spillBuf ??= Buffer.allocUnsafe(SPILL_BATCH);
    this.spillUsed += this.spillBuf.write(text, this.spillUsed, "utf8");
  }

  private writeSpill(): void {
    if (this.fd === undefined || !this.spillBuf || this.spillUsed === 0) return;
    const used = this.spillUsed;
    this.spillUsed = 0;
    this.writeAll(this.spillBuf.subarray(0, used));
  }

  private writeAll(buf: Buffer): void {
    if (this.fd === undefined) return;
    try {
      let done = 0;
      while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done);
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    this.artifactError = (err as Error).message ?? String(err);
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {}
    }
    this.fd = undefined;
    this.spillBuf = undefined;
    this.spillUsed = 0;
  }

  /** Commits the last partial line and closes the artifact file. Idempotent. */
  end(): OutputDump {
    if (!this.ended) {
      if (this.pending) this.flushPending();
      this.ended = true;
      this.writeSpill();
      if (this.fd !== undefined) {
        try {
          closeSync(this.fd);
        } catch (err) {
          this.fail(err);
        }
        this.fd = undefined;
      }
    }
    return this.dump();
  }

  /** What the model sees so far (callable mid-stream for progress). */
  dump(): OutputDump {
    const pendingText = this.pending ? sanitise(this.pending) : "";
    const pendingBytes = Buffer.byteLength(pendingText);
    const totalBytes = this.bytes + pendingBytes;
    const endsWithNewline = pendingText ? pendingText.endsWith("\n") : this.endsWithNewline;
    const totalLines =
      this.newlines + countNewlines(pendingText) + (totalBytes > 0 && !endsWithNewline ? 1 : 0);
    let text = this.tail.join("") + pendingText;
    const truncated = this.truncated || this.tailBytes + pendingBytes > this.maxBytes;
    if (truncated) {
      const buf = Buffer.from(text);
      let cut = utf8Start(buf, Math.max(0, buf.length - this.maxBytes));
      const atLineStart = cut === 0 ? this.tailAtLineStart : buf[cut - 1] === 0x0a;
      if (!atLineStart) {
        const nl = buf.indexOf(0x0a, cut);
        // Only move to the next line when something is left after it (one huge line stays cut).
        if (nl >= 0 && nl + 1 < buf.length) cut = nl + 1;
      }
      text = buf.subarray(cut).toString("utf8");
    }
    const outputLines = countNewlines(text) + (text.length > 0 && !text.endsWith("\n") ? 1 : 0);
    return {
      text,
      truncated,
      totalLines,
      totalBytes,
      outputLines,
      firstLine: Math.max(1, totalLines - outputLines + 1),
      artifactId: this.spilled && this.artifact ? this.artifact.id : undefined,
      artifactError: this.artifactError,
    };
  }
}
