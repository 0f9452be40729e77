/**
 * The artifact of one call: every byte of sanitised output with the cell headers and clear markers,
 * in order (docs/output.md). Held in memory while it is small; past `holdBytes`, or when the model's
 * view cut something, it goes to its file, and every later write streams there.
 *
 * Writes are encoded into one preallocated batch buffer and written with synchronous `write`s: the
 * producer (IOPub callbacks) cannot be paused, so unwritten data never piles up behind a stream.
 */
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";

const SPILL_BATCH = 1024 * 1024;

export interface SinkArtifact {
  id: string;
  path: string;
}

export class ArtifactLog {
  /** Newlines written so far: the next byte lands on line `newlines + 1`. */
  private newlines = 0;
  private bytes = 0;
  private endsWithNewline = true;
  private held: string[] = [];
  private heldBytes = 0;
  private fd?: number;
  private batch?: Buffer;
  private batchUsed = 0;
  private opened = false;
  private error?: string;
  private closed = false;

  constructor(
    private readonly artifact: SinkArtifact | undefined,
    private readonly holdBytes: number,
  ) {}

  /** 1-based number of the line the next write starts on (or continues). */
  get nextLine(): number {
    return this.newlines + 1;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  /** Lines in the artifact (a last line without a break counts). */
  get totalLines(): number {
    return this.newlines + (this.endsWithNewline ? 0 : 1);
  }

  get atLineStart(): boolean {
    return this.endsWithNewline;
  }

  get id(): string | undefined {
    return this.opened ? this.artifact?.id : undefined;
  }

  get failure(): string | undefined {
    return this.error;
  }

  /** Appends sanitised text (`size` and `newlines` when the caller counted them already). */
  write(text: string, size = Buffer.byteLength(text), newlines?: number): void {
    if (text.length === 0 || this.closed) return;
    this.bytes += size;
    if (newlines !== undefined) this.newlines += newlines;
    else for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) this.newlines++;
    this.endsWithNewline = text.charCodeAt(text.length - 1) === 10;
    if (this.opened) {
      this.spill(text, size);
      return;
    }
    this.held.push(text);
    this.heldBytes += size;
    if (this.heldBytes > this.holdBytes) this.open();
  }

  /** Makes sure the file exists with everything so far (something was cut: the model is pointed here). */
  open(): void {
    if (this.opened || this.closed || !this.artifact) return;
    this.opened = true;
    try {
      mkdirSync(dirname(this.artifact.path), { recursive: true });
      this.fd = openSync(this.artifact.path, "w", 0o600);
    } catch (err) {
      this.fail(err);
    }
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (const piece of held) this.spill(piece, Buffer.byteLength(piece));
  }

  /** Closes the file; `keep` false removes a file nothing points to. Idempotent. */
  close(keep: boolean): void {
    if (this.closed) return;
    if (keep) this.open();
    this.closed = true;
    this.held = [];
    this.flushBatch();
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch (err) {
        this.fail(err);
      }
      this.fd = undefined;
    }
    this.batch = undefined;
    if (!keep && this.opened && this.artifact) {
      try {
        unlinkSync(this.artifact.path);
      } catch {
        /* never created, or already gone */
      }
      this.opened = false;
    }
  }

  /** Encodes straight into the batch buffer (no allocation per chunk). */
  private spill(text: string, size: number): void {
    if (this.fd === undefined) return;
    if (size > SPILL_BATCH - this.batchUsed) this.flushBatch();
    if (size > SPILL_BATCH) {
      this.writeAll(Buffer.from(text, "utf8"));
      return;
    }
    this.batch ??= Buffer.allocUnsafe(SPILL_BATCH);
    this.batchUsed += this.batch.write(text, this.batchUsed, "utf8");
  }

  private flushBatch(): void {
    if (this.fd === undefined || !this.batch || this.batchUsed === 0) return;
    const used = this.batchUsed;
    this.batchUsed = 0;
    this.writeAll(this.batch.subarray(0, used));
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
    this.error = (err as Error).message ?? String(err);
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {}
    }
    this.fd = undefined;
    this.batch = undefined;
    this.batchUsed = 0;
  }
}
