/**
 * Artifact store: full outputs that were too long for the model, kept as files and named by id
 * (`artifact://<id>`). Layout, per user and per session:
 *
 *   <root>/sessions/<session>/artifacts/<id>.log      root = NBAGENT_STATE_DIR or $TMPDIR/nbagent-<uid>
 *
 * Ids are unique across sessions, so any process of the same user (e.g. `nbagent artifact <id>`)
 * can resolve one by looking through the session directories. `prune` removes the store's own
 * artifact files past an age (a runtime does it once when created); what else is in a session's
 * ARTIFACTS directory belongs to the user's code and is never touched.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { readdir, stat, unlink } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

export const ARTIFACT_SCHEME = "artifact://";
const ID_RE = /^[A-Za-z0-9_-]{1,80}$/;
/** The files `create` names: `<time base36>-<10 hex>.log`. */
const OWN_FILE_RE = /^[0-9a-z]+-[0-9a-f]{10}\.log$/;
/** Artifacts older than this are removed when a runtime starts (NBAGENT_ARTIFACT_DAYS overrides; 0 keeps all). */
export const DEFAULT_ARTIFACT_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** NBAGENT_STATE_DIR, else $TMPDIR/nbagent-<uid>: the per-user state directory when none is given. */
export function defaultStateRoot(): string {
  const configured = process.env.NBAGENT_STATE_DIR?.trim();
  if (configured) return configured;
  let uid: string;
  try {
    uid = String(userInfo().uid);
  } catch {
    uid = process.env.USER ?? "user";
  }
  return join(tmpdir(), `nbagent-${uid}`);
}

/** Turns a session id into a safe directory name. */
export function sessionDirName(sessionId: string): string {
  const clean = sessionId.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 80);
  return clean && clean !== "." && clean !== ".." ? clean : "default";
}

/** `artifact://abc` or `abc` → `abc`; undefined for anything that is not a valid id. */
export function parseArtifactId(ref: string): string | undefined {
  const id = ref.startsWith(ARTIFACT_SCHEME) ? ref.slice(ARTIFACT_SCHEME.length) : ref;
  return ID_RE.test(id) ? id : undefined;
}

export interface ArtifactRef {
  id: string;
  path: string;
  uri: string;
}

export interface ArtifactReadOptions {
  /** 1-based first line (default 1). */
  offset?: number;
  /** Lines to return at most (default 2000). */
  limit?: number;
  /** Bytes to return at most (default 50 KiB); a longer line is cut. */
  maxBytes?: number;
}

export interface ArtifactSlice {
  id: string;
  path: string;
  text: string;
  /** 1-based line numbers of the returned text (endLine < startLine when nothing was returned). */
  startLine: number;
  endLine: number;
  /** More text follows; continue with offset = endLine + 1 (or the same line when it was cut). */
  hasMore: boolean;
  /** The returned text ends inside a line longer than maxBytes. */
  lineCut: boolean;
  sizeBytes: number;
}

export interface ArtifactStoreOptions {
  /** Per-user state root (default $TMPDIR/nbagent-<uid>). */
  root?: string;
}

export class ArtifactStore {
  readonly root: string;

  constructor(options: ArtifactStoreOptions = {}) {
    this.root = options.root ?? defaultStateRoot();
  }

  /** The directory of one session (its ARTIFACTS directory lives inside). */
  sessionDir(sessionId: string): string {
    return join(this.root, "sessions", sessionDirName(sessionId));
  }

  artifactsDir(sessionId: string): string {
    return join(this.sessionDir(sessionId), "artifacts");
  }

  /** Reserves a new artifact id and path (the file is created by whoever writes it). */
  create(sessionId: string): ArtifactRef {
    const dir = this.artifactsDir(sessionId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const id = `${Date.now().toString(36)}-${randomBytes(5).toString("hex")}`;
    return { id, path: join(dir, `${id}.log`), uri: `${ARTIFACT_SCHEME}${id}` };
  }

  /**
   * Deletes this store's artifact files (only those `create` named) last modified more than
   * `maxAgeMs` ago, in every session (directories stay: a live kernel's ARTIFACTS points there).
   * Returns how many files went. Errors on single files are skipped: another process may be pruning
   * or writing too.
   */
  async prune(maxAgeMs: number, now = Date.now()): Promise<number> {
    const sessions = join(this.root, "sessions");
    let removed = 0;
    for (const name of await readdir(sessions).catch(() => [] as string[])) {
      const dir = join(sessions, name, "artifacts");
      for (const file of await readdir(dir).catch(() => [] as string[])) {
        if (!OWN_FILE_RE.test(file)) continue;
        const path = join(dir, file);
        try {
          if (now - (await stat(path)).mtimeMs <= maxAgeMs) continue;
          await unlink(path);
          removed++;
        } catch {
          /* gone already, or not ours to remove */
        }
      }
    }
    return removed;
  }

  /** Path of an existing artifact, or undefined. Accepts `artifact://<id>` or a bare id. */
  resolve(ref: string): string | undefined {
    const id = parseArtifactId(ref);
    if (!id) return undefined;
    const sessions = join(this.root, "sessions");
    let names: string[];
    try {
      names = readdirSync(sessions);
    } catch {
      return undefined;
    }
    for (const name of names) {
      const path = join(sessions, name, "artifacts", `${id}.log`);
      if (existsSync(path)) return path;
    }
    return undefined;
  }

  /** Reads lines [offset, offset+limit) of an artifact without loading the whole file. */
  async read(ref: string, options: ArtifactReadOptions = {}): Promise<ArtifactSlice> {
    const id = parseArtifactId(ref);
    const path = id ? this.resolve(id) : undefined;
    if (!id || !path)
      throw new Error(`Artifact not found: ${ref}. Use the artifact://<id> from a tool result.`);
    const offset = Math.max(1, Math.floor(options.offset ?? 1));
    const limit = Math.max(1, Math.floor(options.limit ?? 2000));
    const maxBytes = Math.max(1, Math.floor(options.maxBytes ?? 50 * 1024));
    const sizeBytes = statSync(path).size;
    const parts: Buffer[] = [];
    let kept = 0;
    let line = 1;
    let linesOut = 0;
    let hasMore = false;
    let lineCut = false;
    let lastLine = offset - 1;
    const stream = createReadStream(path, { highWaterMark: 256 * 1024 });
    try {
      outer: for await (const chunk of stream as AsyncIterable<Buffer>) {
        let pos = 0;
        while (pos < chunk.length) {
          const nl = chunk.indexOf(0x0a, pos);
          const end = nl < 0 ? chunk.length : nl + 1;
          if (line >= offset) {
            if (linesOut >= limit) {
              hasMore = true;
              break outer;
            }
            const piece = chunk.subarray(pos, end);
            if (kept + piece.length > maxBytes) {
              const room = maxBytes - kept;
              if (room > 0 && linesOut === 0) {
                parts.push(piece.subarray(0, room));
                lineCut = true;
                lastLine = line;
              }
              hasMore = true;
              break outer;
            }
            parts.push(piece);
            kept += piece.length;
            lastLine = line;
          }
          if (nl >= 0) {
            if (line >= offset) linesOut++;
            line++;
          }
          pos = end;
        }
      }
    } finally {
      stream.destroy();
    }
    let buf = Buffer.concat(parts);
    if (lineCut) {
      let end = buf.length;
      // do not end inside a UTF-8 character
      let i = end - 1;
      while (i >= 0 && (buf[i] & 0xc0) === 0x80) i--;
      if (i >= 0) {
        const lead = buf[i];
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (end - i < need) end = i;
      }
      buf = buf.subarray(0, end);
    }
    return {
      id,
      path,
      text: buf.toString("utf8"),
      startLine: offset,
      endLine: lastLine,
      hasMore,
      lineCut,
      sizeBytes,
    };
  }
}
