/**
 * Artifact store: full outputs that were too long for the model, kept as files and named by id
 * (`artifact://<id>`). Layout, per user and per session:
 *
 *   <root>/sessions/<session>/outputs/<id>.log     root = NBAGENT_STATE_DIR or $TMPDIR/nbagent-<uid>
 *   <root>/sessions/<session>/artifacts/           the kernel's $NBAGENT_ARTIFACTS: the user's, not ours
 *
 * The host writes only in `outputs/`, a folder no kernel is given; `artifacts/` is written by code in
 * kernels, so the store reads there only ids it made before this layout, and never follows or
 * trusts what is there (docs/artifacts.md, "What a kernel can plant"). Ids are unique across
 * sessions, so any process of the same user (e.g. `nbagent artifact <id>`) can resolve one by
 * looking through the session directories. `prune` removes the store's own artifact files past an
 * age (a runtime does it once when created); anything else is never touched.
 */

import { lstatSync, mkdirSync, readdirSync, readlinkSync, type Stats } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "../sys/crypto.js";
import { type FileHandle, lstat, readdir, unlink } from "../sys/fs-promises.js";
import { stateDir } from "../sys/state-dir.js";
import { incompleteMarkerPath, MARKER_REASON_RE } from "./artifact-log.js";
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
import { ARTIFACT_PAGE_BYTES, ARTIFACT_PAGE_LINES, ARTIFACT_TOOL_LINES } from "./model-budgets.js";
import { checkOwnedFileSync, isOwnDir, openOwnedFile, ownedByMe, RefusedFileError } from "./safe-file.js";

export const ARTIFACT_SCHEME = "artifact://";
const ID_RE = /^[A-Za-z0-9_-]{1,80}$/;
/** The files `create` names: `<time base36>-<10 hex>.log`, and the marker of an incomplete one. */
const OWN_FILE_RE = /^[0-9a-z]+-[0-9a-f]{10}\.(log|incomplete)$/;

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
  /** Lines to return at most (default ARTIFACT_PAGE_LINES: 2000). */
  limit?: number;
  /** Bytes to return at most (default ARTIFACT_PAGE_BYTES: 50 KiB, newlines not counted); a longer first line is cut. */
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
  /** Matching lines to list at most (default ARTIFACT_TOOL_LINES: 200). */
  limit?: number;
  /** Bytes of listed text at most (default ARTIFACT_PAGE_BYTES: 50 KiB). */
  maxBytes?: number;
}

export interface ArtifactSearchResult extends ArtifactSearch {
  id: string;
  path: string;
  pattern: PatternSpec;
}

export interface ArtifactStoreOptions {
  /** Per-user state root (default $TMPDIR/nbagent-<uid>; the edges pass the resolved one). */
  root?: string;
}

export class ArtifactStore {
  readonly root: string;
  /** Line indexes of recently read artifacts, by path (most recent last). */
  private readonly indexes = new Map<string, LineIndex>();
  /** The outputs folders create() has made. */
  private readonly madeDirs = new Set<string>();

  constructor(options: ArtifactStoreOptions = {}) {
    this.root = options.root ?? stateDir({});
  }

  /** The directory of one session (its ARTIFACTS directory lives inside). */
  sessionDir(sessionId: string): string {
    return join(this.root, "sessions", sessionDirName(sessionId));
  }

  /** The session's ARTIFACTS folder: given to its kernels (writable), the user's files, not the store's. */
  artifactsDir(sessionId: string): string {
    return join(this.sessionDir(sessionId), "artifacts");
  }

  /** Where the store writes the session's artifacts: a folder no kernel is given (docs/artifacts.md). */
  outputsDir(sessionId: string): string {
    return join(this.sessionDir(sessionId), OUTPUTS);
  }

  /**
   * Reserves a new artifact id and path. The file is created by whoever writes it, exclusively and
   * without following links (ArtifactLog); a folder that cannot be made is reported by that writer.
   */
  create(sessionId: string): ArtifactRef {
    const dir = this.outputsDir(sessionId);
    // Made once per folder: the writer makes (and checks) it again before it creates a file, so a
    // folder removed since is made anew by whoever writes there.
    if (!this.madeDirs.has(dir)) {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        this.madeDirs.add(dir);
      } catch {
        /* the writer fails to create the file and says why */
      }
    }
    const id = `${Date.now().toString(36)}-${randomBytes(5).toString("hex")}`;
    return { id, path: join(dir, `${id}.log`), uri: `${ARTIFACT_SCHEME}${id}` };
  }

  /**
   * Deletes this store's artifact files (only those `create` named: `<id>.log` regular files and
   * `<id>.incomplete` markers, of this user) last modified more than `maxAgeMs` ago, in every
   * session's `outputs/` and, for ids made before that folder existed, `artifacts/` (directories
   * stay: a live kernel's ARTIFACTS points there). Never follows a link: a folder that is a link is
   * not entered, a link is removed only as a marker (the link itself). Returns how many files went.
   * Errors on single files are skipped: another process may be pruning or writing too.
   */
  async prune(maxAgeMs: number, now = Date.now()): Promise<number> {
    const sessions = join(this.root, "sessions");
    let removed = 0;
    for (const name of await readdir(sessions).catch(() => [] as string[])) {
      if (!isOwnDir(join(sessions, name))) continue;
      for (const sub of [OUTPUTS, LEGACY]) {
        const dir = join(sessions, name, sub);
        if (!isOwnDir(dir)) continue;
        for (const file of await readdir(dir).catch(() => [] as string[])) {
          if (!OWN_FILE_RE.test(file)) continue;
          const path = join(dir, file);
          try {
            const st = await lstat(path);
            if (!isStoreFile(path, st) || now - st.mtimeMs <= maxAgeMs) continue;
            await unlink(path);
            removed++;
          } catch {
            /* gone already, or not ours to remove */
          }
        }
      }
    }
    return removed;
  }

  /**
   * Path of an existing artifact the store may read (a regular file of this user, not a link), or
   * undefined. Accepts `artifact://<id>` or a bare id. `openFile`/`read` say why one was refused.
   */
  resolve(ref: string): string | undefined {
    const id = parseArtifactId(ref);
    if (!id) return undefined;
    for (const candidate of this.candidates(id)) {
      try {
        if (checkOwnedFileSync(candidate.path)) return candidate.path;
      } catch {
        /* refused: not a file the store reads */
      }
    }
    return undefined;
  }

  /**
   * Opens an artifact for reading (O_NOFOLLOW, checked to be a regular file of this user): the
   * caller closes `handle`. ArtifactReadError "not_found" or "refused".
   */
  async openFile(ref: string): Promise<{ id: string; path: string; handle: FileHandle; stats: Stats }> {
    const id = parseArtifactId(ref);
    if (!id) throw new ArtifactReadError("not_found", `Artifact not found: ${ref}`);
    let refused: ArtifactReadError | undefined;
    for (const candidate of this.candidates(id)) {
      try {
        const opened = await openOwnedFile(candidate.path);
        if (opened) return { id, path: candidate.path, ...opened };
      } catch (err) {
        refused ??= refusal(err, id, candidate.kernelWritable);
      }
    }
    throw refused ?? new ArtifactReadError("not_found", `Artifact not found: ${ref}`);
  }

  /**
   * Where an id's file may be, in order: every session's `outputs/` (the store's own folder), then
   * every session's `artifacts/` (ids made before `outputs/` existed; kernels can write there).
   * Session folders and these folders are used only when they are real directories of this user.
   */
  private candidates(id: string): { path: string; kernelWritable: boolean }[] {
    const sessions = join(this.root, "sessions");
    let names: string[];
    try {
      names = readdirSync(sessions).filter((name) => isOwnDir(join(sessions, name)));
    } catch {
      return [];
    }
    const out: { path: string; kernelWritable: boolean }[] = [];
    for (const sub of [OUTPUTS, LEGACY]) {
      for (const name of names) {
        const dir = join(sessions, name, sub);
        if (isOwnDir(dir)) out.push({ path: join(dir, `${id}.log`), kernelWritable: sub === LEGACY });
      }
    }
    return out;
  }

  /**
   * One page from line `offset`, byte `column` (ArtifactReadError when not found or past the end;
   * past the end, its facts carry the artifact's size and whether it is known incomplete).
   */
  async read(ref: string, options: ArtifactReadOptions = {}): Promise<ArtifactSlice> {
    const { id, path, index, handle } = await this.open(ref);
    const incomplete = this.incomplete(path);
    let page: ArtifactPage;
    try {
      page = await readPage(handle, index, {
        offset: whole(options.offset, 1),
        column: whole(options.column, 1),
        limit: whole(options.limit, ARTIFACT_PAGE_LINES),
        maxBytes: whole(options.maxBytes, ARTIFACT_PAGE_BYTES),
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
    } finally {
      await handle.close();
    }
    return { ...page, id, path, text: page.data.toString("utf8"), incomplete };
  }

  /** Whether the artifact at `path` is known to be incomplete, and why when recorded. */
  incomplete(path: string): StoredIncomplete | undefined {
    const marker = incompleteMarkerPath(path);
    try {
      const st = lstatSync(marker);
      if (!isStoreFile(marker, st)) return undefined; // not a marker the store made
      if (!st.isSymbolicLink()) return {}; // an empty marker: reason unknown
      const reason = readlinkSync(marker); // the link's text: never followed
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
    const { id, path, index, handle } = await this.open(ref);
    try {
      const found = await searchLines(handle, index, spec, {
        offset: whole(options.offset, 1),
        limit: whole(options.limit, ARTIFACT_TOOL_LINES),
        maxBytes: whole(options.maxBytes, ARTIFACT_PAGE_BYTES),
      });
      return { ...found, id, path, pattern: spec };
    } finally {
      await handle.close();
    }
  }

  /**
   * Opens an id's file and returns the line index of the file as it is now (cached while unchanged);
   * the caller closes `handle`.
   */
  private async open(
    ref: string,
  ): Promise<{ id: string; path: string; index: LineIndex; handle: FileHandle }> {
    const { id, path, handle, stats: st } = await this.openFile(ref);
    try {
      const key = `${path}\0${st.dev}:${st.ino}`;
      const cached = this.indexes.get(key);
      if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs)
        return { id, path, index: cached, handle };
      const index = await buildLineIndex(handle, st.size, st.mtimeMs);
      this.indexes.delete(key);
      this.indexes.set(key, index);
      if (this.indexes.size > 16) this.indexes.delete(this.indexes.keys().next().value as string);
      return { id, path, index, handle };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }
}

/** The store's folder in a session, and the one the store wrote to before it (the kernel's ARTIFACTS). */
const OUTPUTS = "outputs";
const LEGACY = "artifacts";

/**
 * Whether an entry named like the store's files is one the store made: a `.log` regular file, or an
 * `.incomplete` marker (an empty regular file, or a link whose text is an error code), of this user.
 */
function isStoreFile(path: string, st: Stats): boolean {
  if (!ownedByMe(st)) return false;
  if (path.endsWith(".log")) return st.isFile();
  if (st.isFile()) return st.size === 0;
  if (!st.isSymbolicLink()) return false;
  const text = readlinkSync(path); // the link's own text: never followed
  return text === "error" || MARKER_REASON_RE.test(text);
}

/** The typed refusal for what safe-file refused at an id's name. */
function refusal(err: unknown, id: string, kernelWritable: boolean): ArtifactReadError {
  if (!(err instanceof RefusedFileError)) throw err;
  return new ArtifactReadError("refused", `${ARTIFACT_SCHEME}${id}: ${err.message}`, {
    refusal: err.refusal,
    ownerUid: err.ownerUid,
    kernelWritable,
  });
}

function whole(n: number | undefined, fallback: number): number {
  return n === undefined ? fallback : Math.max(1, Math.floor(n));
}
