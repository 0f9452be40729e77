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
import { existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync } from "node:fs";
import { lstat, readdir, stat, unlink } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { incompleteMarkerPath } from "./artifact-log.js";
import {
  type ArtifactPage,
  ArtifactReadError,
  type ArtifactSearch,
  buildLineIndex,
  type LineIndex,
  type PatternSpec,
  parsePattern,
  readPage,
  searchLines,
} from "./artifact-pages.js";

/** Bytes one page holds at most (newlines not counted). */
export const DEFAULT_PAGE_BYTES = 50 * 1024;

export const ARTIFACT_SCHEME = "artifact://";
const ID_RE = /^[A-Za-z0-9_-]{1,80}$/;
/** The files `create` names: `<time base36>-<10 hex>.log`, and the marker of an incomplete one. */
const OWN_FILE_RE = /^[0-9a-z]+-[0-9a-f]{10}\.(log|incomplete)$/;
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
  /** 1-based byte in that line to start at (default 1): continues a line cut by the previous page. */
  column?: number;
  /** Lines to return at most (default 2000). */
  limit?: number;
  /** Bytes to return at most (default 50 KiB, newlines not counted); a longer first line is cut. */
  maxBytes?: number;
}

/**
 * An artifact known to hold only the start of its output (its writer failed: disk full, …). What it
 * kept is the file (`sizeBytes`); `reason` is the error code ("ENOSPC", …) when the writer recorded it.
 */
export interface StoredIncomplete {
  reason?: string;
  message?: string;
}

export interface ArtifactSlice extends ArtifactPage {
  id: string;
  path: string;
  /** `data` as text. */
  text: string;
  /** Set when the artifact is known to be incomplete (the rest of the output was not saved). */
  incomplete?: StoredIncomplete;
}

export interface ArtifactSearchOptions {
  /** 1-based line to list matches from (default 1). */
  offset?: number;
  /** Matching lines to list at most (default 200). */
  limit?: number;
  /** Bytes of listed text at most (default 50 KiB). */
  maxBytes?: number;
}

export interface ArtifactSearchResult extends ArtifactSearch {
  id: string;
  path: string;
  pattern: PatternSpec;
}

export interface ArtifactStoreOptions {
  /** Per-user state root (default $TMPDIR/nbagent-<uid>). */
  root?: string;
}

export class ArtifactStore {
  readonly root: string;
  /** Line indexes of recently read artifacts, by path (most recent last). */
  private readonly indexes = new Map<string, LineIndex>();

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
          if (now - (await lstat(path)).mtimeMs <= maxAgeMs) continue;
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

  /**
   * One page from line `offset`, byte `column` (ArtifactReadError when not found or past the end;
   * past the end, its facts carry the artifact's size and whether it is known incomplete).
   */
  async read(ref: string, options: ArtifactReadOptions = {}): Promise<ArtifactSlice> {
    const { id, path, index } = await this.open(ref);
    const incomplete = this.incomplete(path);
    let page: ArtifactPage;
    try {
      page = await readPage(path, index, {
        offset: whole(options.offset, 1),
        column: whole(options.column, 1),
        limit: whole(options.limit, 2000),
        maxBytes: whole(options.maxBytes, DEFAULT_PAGE_BYTES),
      });
    } catch (err) {
      if (err instanceof ArtifactReadError && err.code === "past_end") {
        throw new ArtifactReadError(err.code, err.message, {
          ...err.facts,
          sizeBytes: index.size,
          ...(incomplete ? { incomplete } : {}),
        });
      }
      throw err;
    }
    return { ...page, id, path, text: page.data.toString("utf8"), incomplete };
  }

  /** Whether the artifact at `path` is known to be incomplete, and why when recorded. */
  incomplete(path: string): StoredIncomplete | undefined {
    const marker = incompleteMarkerPath(path);
    try {
      if (!lstatSync(marker).isSymbolicLink()) return {}; // an empty marker: reason unknown
      const reason = readlinkSync(marker);
      return reason === "error" ? {} : { reason };
    } catch {
      return undefined;
    }
  }

  /** The lines matching `pattern` (see parsePattern), listed from line `offset` within bounds. */
  async search(
    ref: string,
    pattern: string,
    options: ArtifactSearchOptions = {},
  ): Promise<ArtifactSearchResult> {
    const spec = parsePattern(pattern);
    const { id, path, index } = await this.open(ref);
    const found = await searchLines(path, index, spec, {
      offset: whole(options.offset, 1),
      limit: whole(options.limit, 200),
      maxBytes: whole(options.maxBytes, DEFAULT_PAGE_BYTES),
    });
    return { ...found, id, path, pattern: spec };
  }

  /** Resolves an id and returns the line index of the file as it is now (cached while unchanged). */
  private async open(ref: string): Promise<{ id: string; path: string; index: LineIndex }> {
    const id = parseArtifactId(ref);
    const path = id ? this.resolve(id) : undefined;
    if (!id || !path) throw new ArtifactReadError("not_found", `Artifact not found: ${ref}`);
    const st = await stat(path);
    const cached = this.indexes.get(path);
    if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs)
      return { id, path, index: cached };
    const index = await buildLineIndex(path, st.size, st.mtimeMs);
    this.indexes.delete(path);
    this.indexes.set(path, index);
    if (this.indexes.size > 16) this.indexes.delete(this.indexes.keys().next().value as string);
    return { id, path, index };
  }
}

function whole(n: number | undefined, fallback: number): number {
  return n === undefined ? fallback : Math.max(1, Math.floor(n));
}
