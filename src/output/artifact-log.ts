/**
 * The artifact of one call: every byte of sanitised output with the cell headers and clear markers,
 * in order (docs/output.md). Held in memory while it is small; past `holdBytes`, or when the model's
 * view cut something, it goes to its file, and every later write streams there.
 *
 * Writes are encoded into one preallocated batch buffer and written with synchronous `write`s: the
 * producer (IOPub callbacks) cannot be paused, so unwritten data never piles up behind a stream.
 */
import { closeSync, fstatSync, lstatSync, readSync, symlinkSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { createExclusive, ensureOwnDir, ownedByMe } from "./safe-file.js";

const SPILL_BATCH = 1024 * 1024;

export interface SinkArtifact {
  id: string;
  path: string;
}

/**
 * An artifact that could not be written whole (disk full, quota, file size limit, I/O error): its
 * file holds the first `keptBytes` of the output, lines 1 to `keptLines` (the last one cut when
 * `lastLinePartial`), and the rest is lost. `reason` is the error's code ("ENOSPC", "EDQUOT",
 * "EFBIG", …) when it has one.
 */
export interface ArtifactIncomplete {
  keptBytes: number;
  keptLines: number;
  lastLinePartial: boolean;
  reason?: string;
  message: string;
}

/** The marker beside an artifact that is known to be incomplete (docs/artifacts.md). */
export function incompleteMarkerPath(artifactPath: string): string {
  return artifactPath.replace(/\.log$/, "") + ".incomplete";
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
  /** The file was created (it exists unless something else removed it). */
  private created = false;
  /** What was created (device and inode): removal unlinks the path only while it is still this file. */
  private createdAs?: { dev: number; ino: number };
  /** This writer made the incomplete marker (so it may remove it). */
  private markerMade = false;
  /** Bytes that reached the file. */
  private written = 0;
  private error?: string;
  private incompleteInfo?: ArtifactIncomplete;
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

  /** The artifact's id once its file exists (none when it could not even be created). */
  get id(): string | undefined {
    return this.opened && this.created ? this.artifact?.id : undefined;
  }

  get failure(): string | undefined {
    return this.error;
  }

  /** Set when the file stopped taking writes: what it kept and why. */
  get incomplete(): ArtifactIncomplete | undefined {
    return this.incompleteInfo;
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
      // Never through a link or over something already there (docs/artifacts.md).
      ensureOwnDir(dirname(this.artifact.path));
      this.fd = createExclusive(this.artifact.path);
      this.created = true;
      const st = fstatSync(this.fd);
      this.createdAs = { dev: st.dev, ino: st.ino };
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
      // Only what this writer made, and only while the name still holds it (unlink never follows).
      const path = this.artifact.path;
      try {
        const st = lstatSync(path);
        if (this.createdAs && st.dev === this.createdAs.dev && st.ino === this.createdAs.ino)
          unlinkSync(path);
      } catch {
        /* never created, or already gone */
      }
      if (this.markerMade) {
        try {
          const marker = incompleteMarkerPath(path);
          if (ownedByMe(lstatSync(marker))) unlinkSync(marker);
        } catch {
          /* already gone */
        }
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
      while (done < buf.length) {
        const n = writeSync(this.fd, buf, done, buf.length - done);
        done += n;
        this.written += n;
      }
    } catch (err) {
      this.fail(err);
    }
  }

  /** Stops writing; a file that exists keeps what reached it and gets its marker. */
  private fail(err: unknown): void {
    this.error = (err as Error).message ?? String(err);
    // What was kept is counted through the writer's own descriptor, never by opening the path again.
    const kept = this.fd !== undefined ? keptLines(this.fd, this.written) : { lines: 0, partial: false };
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd);
      } catch {}
    }
    this.fd = undefined;
    this.batch = undefined;
    this.batchUsed = 0;
    if (!this.created || !this.artifact) return;
    const reason = (err as NodeJS.ErrnoException).code;
    this.incompleteInfo = {
      keptBytes: this.written,
      keptLines: kept.lines,
      lastLinePartial: kept.partial,
      reason: typeof reason === "string" ? reason : undefined,
      message: this.error,
    };
    this.markerMade = writeMarker(this.artifact.path, this.incompleteInfo);
  }
}

/**
 * Marks an artifact incomplete for readers in any process: a symbolic link beside it whose target is
 * the error code (e.g. "ENOSPC"). A short link needs no data block, so it can be made on the very
 * disk that just filled up; an empty file, the fallback, says "incomplete" without the reason.
 * Neither follows or replaces anything already at that name (a link planted there stays as it is,
 * and the artifact then has no marker). Returns whether the marker was made.
 */
function writeMarker(path: string, info: ArtifactIncomplete): boolean {
  const marker = incompleteMarkerPath(path);
  try {
    symlinkSync(markerTarget(info.reason), marker);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
  }
  try {
    closeSync(createExclusive(marker));
    return true;
  } catch {
    return false; /* no marker: readers see only the file */
  }
}

/** What a marker link points to: the error code, or "error" when there is none that fits. */
export function markerTarget(reason: string | undefined): string {
  return reason && MARKER_REASON_RE.test(reason) ? reason : "error";
}

/** The error codes a marker link may name. */
export const MARKER_REASON_RE = /^[A-Z0-9]{1,32}$/;

/** Lines in the first `bytes` of the open file, and whether the last has no newline (none when unreadable). */
function keptLines(fd: number, bytes: number): { lines: number; partial: boolean } {
  let newlines = 0;
  let last = 10;
  try {
    const buf = Buffer.allocUnsafe(Math.min(bytes, SPILL_BATCH) || 1);
    for (let pos = 0; pos < bytes; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, bytes - pos), pos);
      if (n <= 0) break;
      for (let i = buf.indexOf(10); i >= 0 && i < n; i = buf.indexOf(10, i + 1)) newlines++;
      last = buf[n - 1];
      pos += n;
    }
  } catch {
    return { lines: 0, partial: false };
  }
  const partial = last !== 10;
  return { lines: newlines + (partial ? 1 : 0), partial };
}
