/**
 * Loading and saving .ipynb files: read + fingerprint, parse, structure check; atomic save
 * (temp file in the same directory, fsync, rename; owner, group and mode kept where the OS allows)
 * that refuses when the file changed on disk since it was read or the user could not write it.
 * Rules: docs/notebook-tool.md ("Files").
 */

import { isUtf8 } from "node:buffer";
import {
  accessSync,
  type BigIntStats,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  statSync,
  writeSync,
  writevSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { createTempBesideSync } from "../sys/atomic-write.js";
import {
  type OutsidePath,
  OutsideRootsError,
  openDirWithin,
  openFileWithin,
  pinnedPath,
  realRoots,
} from "../sys/confined-path.js";
import { unlink } from "../sys/fs-promises.js";
import { decodeJson } from "./decode.js";
import type { JsonValue } from "./json.js";
import { LockTimeoutError, withFileLock } from "./lock.js";
import { assertNotebook, type Notebook, NotebookStructureError } from "./model.js";
import { kindOf, NotRegularFileError, openRegular } from "./regular-file.js";
import { JsonSyntaxError } from "./scan.js";
import { NBFORMAT_STYLE } from "./serialize.js";
import { type Layout, layoutOf, render } from "./splice.js";
import { sweepLeftovers } from "./sweep.js";
import { isNbformat3, upgradeFromV3 } from "./upgrade.js";

/** What a load saw on disk; a save proceeds only if the file still matches it. */
export interface Fingerprint {
  dev: number;
  ino: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  /** The bytes read (or written, as chunks); compared with the file when timestamps cannot be trusted. */
  content: Buffer[];
  /**
   * ctime was within a timestamp tick of the load: a same-tick in-place write could hide from stat.
   * Cleared by the first check that finds the same bytes once that tick is over (changedSince).
   */
  racy: boolean;
  /** When (Date.now() ms) ctime's tick is over for sure: a write after it changes ctime. */
  racyEnds: number;
}

/** Larger than any filesystem's timestamp granularity (FAT: 2 s). */
const RACY_MS = 3_000;
/**
 * For timestamps with sub-millisecond digits (ext4, xfs, btrfs, tmpfs…): the kernel stamps files
 * from a clock that advances once per scheduler tick (≤ 10 ms), so a later write gets a different
 * ctime unless it lands within a tick of this one. A wide margin, still far from the 3 s above,
 * which would make every edit of a file saved moments ago re-read it whole.
 */
const FINE_RACY_MS = 100;

export interface LoadedNotebook {
  /** The real path (symlinks resolved) that is read and replaced. */
  path: string;
  notebook: Notebook;
  fingerprint: Fingerprint;
  /** Mode bits to give the replacement file. */
  mode: number;
  uid: number;
  gid: number;
  /** NaN / Infinity tokens in the file as read (validate.ts reports them; they are kept, never fixed). */
  nonFinite: number;
  /** The file's whitespace style, the bytes on disk and where its (frozen, unchanged) cells are. */
  layout?: Layout;
  /**
   * The file is an nbformat 3 notebook: `notebook` is its nbformat 4.5 upgrade (upgrade.ts), which a
   * save writes; the file on disk stays version 3 until then (docs/notebook-tool.md).
   */
  upgradedFrom?: 3;
  /**
   * Under --sandbox: the folders (real paths) the file must stay in — every later load and save of
   * it (a run's too) opens it only there (docs/isolation.md, "The notebook and artifact tools under
   * --sandbox"). Undefined: links are followed anywhere (docs/notebook-tool.md, "Files").
   */
  roots?: readonly string[];
}

/** How a notebook may be opened. */
export interface OpenOptions {
  /** Open only inside these folders, never through a link out of them (see LoadedNotebook.roots). */
  roots?: readonly string[];
}

export type NotebookErrorCode =
  | "not_found"
  | "not_a_file"
  | "read_only"
  | "unreadable"
  | "invalid_json"
  | "invalid_structure"
  | "conflict"
  | "locked"
  | "write_failed"
  | "exists"
  | "outside_roots";

/**
 * A load/save failure; `message` is the text for the user (without the Error: prefix) — except for
 * "outside_roots", whose `outside` tools/ words (sandbox-paths.ts).
 */
export class NotebookFileError extends Error {
  constructor(
    readonly code: NotebookErrorCode,
    message: string,
    readonly reason?: string,
    readonly outside?: OutsidePath,
  ) {
    super(message);
  }
}

/** The refusal of a path that leads out of the roots. */
export function outsideRootsError(e: OutsideRootsError): NotebookFileError {
  return new NotebookFileError("outside_roots", e.message, "outside the sandbox's roots", e.outside);
}

function fingerprintOf(st: BigIntStats, content: Buffer[]): Fingerprint {
  const ctimeMs = Number(st.ctimeNs / 1_000_000n);
  const fine = st.ctimeNs % 1_000_000n !== 0n || st.mtimeNs % 1_000_000n !== 0n;
  const window = fine ? FINE_RACY_MS : RACY_MS;
  return {
    dev: Number(st.dev),
    ino: Number(st.ino),
    size: Number(st.size),
    mtimeNs: st.mtimeNs,
    ctimeNs: st.ctimeNs,
    content,
    racy: Math.abs(Date.now() - ctimeMs) < window,
    racyEnds: ctimeMs + window,
  };
}

/** The whole file in as few reads as possible (FileHandle.readFile reads in small chunks). */
function readAll(fd: number, size: number): Buffer {
  let buf = Buffer.allocUnsafe(size + 1);
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2);
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const bytesRead = readSync(fd, buf, length, buf.length - length, length);
    if (bytesRead === 0) return buf.subarray(0, length);
    length += bytesRead;
  }
}

/** A notebook file open for reading: its descriptor, and how to close it. */
interface OpenedNotebook {
  fd: number;
  real: string;
  close(): Promise<void>;
}

/**
 * Opens the notebook at `path` for reading: inside the roots only, when given. Without roots the
 * calls are synchronous (regular-file.ts says why); reads of the descriptor are in either case.
 */
async function openNotebook(path: string, roots: readonly string[] | undefined): Promise<OpenedNotebook> {
  if (!roots) {
    const real = realpathSync.native(path);
    const fd = openRegular(real);
    return { fd, real, close: async () => closeSync(fd) };
  }
  const { handle, real } = await openFileWithin(
    path,
    roots,
    constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY,
    (st) => {
      if (!st.isFile()) throw new NotRegularFileError(kindOf(st));
    },
  );
  return { fd: handle.fd, real, close: () => handle.close() };
}

/**
 * Reads and checks a notebook. `shownPath` is how errors name it (the path the user gave); with
 * `roots`, a path that leads out of them is refused ("outside_roots") before anything is read.
 */
export async function loadNotebook(
  path: string,
  shownPath = path,
  options: OpenOptions = {},
): Promise<LoadedNotebook> {
  const roots = options.roots && realRoots(options.roots);
  let real: string;
  let buf: Buffer;
  let st: BigIntStats;
  try {
    const opened = await openNotebook(path, roots);
    real = opened.real;
    try {
      st = fstatSync(opened.fd, { bigint: true });
      buf = readAll(opened.fd, Number(st.size));
    } finally {
      await opened.close();
    }
  } catch (e) {
    if (e instanceof OutsideRootsError) throw outsideRootsError(e);
    if (e instanceof NotRegularFileError) {
      throw new NotebookFileError(
        "not_a_file",
        `Notebook path is a ${e.kind}, not a notebook file: ${shownPath}. Nothing was read or written.`,
        e.kind,
      );
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new NotebookFileError("not_found", `Notebook not found: ${shownPath}`);
    }
    throw new NotebookFileError("unreadable", `Cannot read notebook ${shownPath}: ${(e as Error).message}`);
  }
  const invalid = (reason: string) =>
    new NotebookFileError("invalid_json", `Invalid JSON in notebook: ${shownPath} (${reason})`, reason);
  if (!isUtf8(buf)) throw invalid(`not UTF-8 text: ${whereNotUtf8(buf)}`);
  if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) {
    throw invalid("the file starts with a UTF-8 byte order mark, which JSON does not allow");
  }
  let value: JsonValue;
  let cellSpans: [number, number][] | undefined;
  let nonFinite = 0;
  try {
    ({ value, cellSpans, nonFinite } = decodeJson(buf));
  } catch (e) {
    throw invalid(syntaxReason(buf, e as Error));
  }
  let upgradedFrom: 3 | undefined;
  try {
    if (isNbformat3(value)) {
      value = upgradeFromV3(value);
      upgradedFrom = 3;
      cellSpans = undefined;
    }
    assertNotebook(value);
  } catch (e) {
    if (!(e instanceof NotebookStructureError)) throw e;
    let message =
      e.message === "missing cells array"
        ? `Invalid notebook structure (missing cells array): ${shownPath}`
        : `Invalid notebook structure (${e.message}): ${shownPath}`;
    const version = (value as { nbformat?: unknown } | null)?.nbformat;
    if (typeof version === "number" && version < 4) {
      // Its cells are in worksheets: say what it is and how to convert it (nbformat upgrades it).
      message += `. It is an nbformat ${version} notebook; nbagent reads nbformat 4. Convert it once, with a Python that has nbformat (\`nbagent doctor\` names one): python3 -c "import nbformat, sys; nbformat.write(nbformat.read(sys.argv[1], as_version=4), sys.argv[1])" '${shownPath.replaceAll("'", "'\\''")}'`;
    }
    throw new NotebookFileError("invalid_structure", message, e.message);
  }
  return {
    path: real,
    notebook: value,
    fingerprint: fingerprintOf(st, [buf]),
    mode: Number(st.mode) & 0o7777,
    uid: Number(st.uid),
    gid: Number(st.gid),
    nonFinite,
    // An upgraded notebook is written whole, as nbformat.write writes it.
    layout: upgradedFrom ? { style: NBFORMAT_STYLE } : layoutOf(buf, value, cellSpans),
    ...(upgradedFrom ? { upgradedFrom } : {}),
    ...(roots ? { roots } : {}),
  };
}

/** "line L, column C" of a byte offset (columns count characters, as Python's json does). */
function position(buf: Buffer, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = buf.indexOf(10); i !== -1 && i < offset; i = buf.indexOf(10, i + 1)) {
    line++;
    lineStart = i + 1;
  }
  let column = 1;
  for (let i = lineStart; i < offset && i < buf.length; i++) if ((buf[i] & 0xc0) !== 0x80) column++;
  return `line ${line}, column ${column}`;
}

/** Where and why JSON parsing failed, for the message the model reads. */
function syntaxReason(buf: Buffer, e: Error): string {
  if (!(e instanceof JsonSyntaxError)) return e.message;
  if (e.offset >= buf.length)
    return `${position(buf, e.offset)}: the file ends before the JSON does (cut off?)`;
  return `${position(buf, e.offset)}: ${e.what}`;
}

/** Position of the first byte that is not part of valid UTF-8. */
function whereNotUtf8(buf: Buffer): string {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i];
    const len =
      b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (len === 0 || !isUtf8(buf.subarray(i, i + len))) break;
    i += len;
  }
  return `first bad byte at ${position(buf, i)}`;
}

function sameBytes(file: Buffer, chunks: Buffer[]): boolean {
  let at = 0;
  for (const c of chunks) {
    if (!file.subarray(at, at + c.length).equals(c)) return false;
    at += c.length;
  }
  return at === file.length;
}

/** Writes all chunks at the start of the file (writev in groups; finishes a partial write plainly). */
function writeChunks(fd: number, chunks: Buffer[]): void {
  let position = 0;
  for (let i = 0; i < chunks.length; i += 512) {
    const group = chunks.slice(i, i + 512);
    const total = group.reduce((n, c) => n + c.length, 0);
    const bytesWritten = writevSync(fd, group, position);
    if (bytesWritten < total) {
      const rest = Buffer.concat(group).subarray(bytesWritten);
      for (let off = 0; off < rest.length; )
        off += writeSync(fd, rest, off, rest.length - off, position + bytesWritten + off);
    }
    position += total;
  }
}

function differs(st: BigIntStats, fp: Fingerprint): boolean {
  return (
    Number(st.dev) !== fp.dev ||
    Number(st.ino) !== fp.ino ||
    Number(st.size) !== fp.size ||
    st.mtimeNs !== fp.mtimeNs ||
    st.ctimeNs !== fp.ctimeNs
  );
}

/**
 * Why the file on disk no longer matches what was read, or undefined when it still does. Any write,
 * rename-over or utimes changes ino, size, mtime or ctime; only a same-size in-place write within
 * the same timestamp tick as the load could hide, so then ("racy", as git calls it) the bytes are
 * read back and compared — until a check that began after that tick finds them the same: every
 * write of that tick is then in the bytes it compared, and any later write changes ctime, so stat
 * alone decides from there on (git settles its "racily clean" entries the same way). Before, a
 * fingerprint stayed racy for good: a run, whose saves all land within a tick of their fingerprint,
 * read the whole notebook back before every cell (a 1,000-cell run spent ~0.25 s comparing).
 */
async function changedSince(
  path: string,
  fp: Fingerprint,
  roots?: readonly string[],
): Promise<string | undefined> {
  const lookedAt = Date.now();
  let st: BigIntStats;
  try {
    st = statSync(path, { bigint: true });
  } catch {
    return "it was deleted or moved";
  }
  if (differs(st, fp)) return "it was modified";
  if (fp.racy) {
    let opened: OpenedNotebook;
    try {
      opened = await openNotebook(path, roots);
    } catch (e) {
      // Swapped for a link out of the roots between the stat and the open.
      if (e instanceof OutsideRootsError) return "it was replaced by a link";
      throw e;
    }
    try {
      if (!sameBytes(readAll(opened.fd, fp.size), fp.content)) return "its content changed";
    } finally {
      await opened.close();
    }
    if (lookedAt >= fp.racyEnds) fp.racy = false;
  }
  return undefined;
}

/** Why the file on disk no longer matches what `loaded` was read (or last saved) as; undefined when it does. */
export function changedOnDisk(loaded: LoadedNotebook): Promise<string | undefined> {
  return changedSince(loaded.path, loaded.fingerprint, loaded.roots);
}

/** Largest file unchangedNow reads to settle a racy fingerprint (synchronously, on a run's hot path). */
const QUICK_COMPARE_BYTES = 1 << 20;

/**
 * True when the file is what `loaded` was read (or last saved) as, checked at once: one stat (same
 * file, size and times) and, while a write could still hide in the timestamps' tick (racy), its
 * bytes (files up to 1 MiB; a larger one answers false). False is "look again" (changedOnDisk), not
 * "changed". Synchronous and microseconds: a pipelined run asks it at each cell's reply, where an
 * event of a watch could still be on its way (the cell that just replied may have written the file
 * itself) — docs/runs.md, "Pipelined cells".
 */
export function unchangedNow(loaded: LoadedNotebook): boolean {
  const fp = loaded.fingerprint;
  const lookedAt = Date.now();
  try {
    if (differs(statSync(loaded.path, { bigint: true }), fp)) return false;
    if (!fp.racy) return true;
    if (fp.size > QUICK_COMPARE_BYTES || !sameBytes(readFileSync(loaded.path), fp.content)) return false;
  } catch {
    return false;
  }
  if (lookedAt >= fp.racyEnds) fp.racy = false;
  return true;
}

/** What a save did besides writing the notebook, for the user to hear about. */
export interface SaveResult {
  /** Other names (hard links) the old file had: they keep showing the old version. */
  otherLinks: number;
  /** Owner, group or mode bits the new file could not take over from the old one: [was, now]. */
  notKept: { uid?: [number, number]; gid?: [number, number]; mode?: [number, number] };
  /** Leftovers of interrupted saves (temp copies, lock debris) removed beside the notebook. */
  removedLeftovers: string[];
}

/** Refuses (NotebookFileError "read_only") a file this user could not write in place. */
async function assertWritable(loaded: LoadedNotebook, shownPath: string): Promise<void> {
  try {
    accessSync(loaded.path, constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EROFS") {
      throw new NotebookFileError(
        "read_only",
        `Notebook is on a read-only file system: ${shownPath}. Nothing was written.`,
        "read-only file system",
      );
    }
    if (code === "EACCES" || code === "EPERM") {
      const mode = (loaded.mode & 0o7777).toString(8).padStart(4, "0");
      throw new NotebookFileError(
        "read_only",
        `Notebook is read-only for this user: ${shownPath} (mode ${mode}, owner uid ${loaded.uid}, uid here ${process.getuid?.()}). Nothing was written; make it writable first if it should be changed.`,
        "permission denied",
      );
    }
    // Missing: the change check says so under the lock.
  }
}

/**
 * Writes the notebook back atomically. Refuses (NotebookFileError) when the file changed since it
 * was loaded ("conflict") or this user could not write it in place ("read_only"); on success the
 * fingerprint is updated so the same LoadedNotebook can be saved again later.
 */
export async function saveNotebook(loaded: LoadedNotebook, shownPath = loaded.path): Promise<SaveResult> {
  if (!loaded.roots) return saveIn(loaded, loaded.path, shownPath);
  // Under --sandbox every step goes through the folder's descriptor, checked to be inside the
  // roots: a folder of the path swapped for a link meanwhile cannot lead the temp file, the lock or
  // the rename anywhere else (confined-path.ts).
  let dir: Awaited<ReturnType<typeof openDirWithin>>;
  try {
    dir = await openDirWithin(dirname(loaded.path), loaded.roots, basename(loaded.path));
  } catch (e) {
    if (e instanceof OutsideRootsError) throw outsideRootsError(e);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw conflict("it was deleted or moved", shownPath);
    throw new NotebookFileError(
      "write_failed",
      `Cannot write notebook ${shownPath}: ${(e as Error).message}. Nothing was written.`,
    );
  }
  try {
    return await saveIn(loaded, join(pinnedPath(dir.handle), basename(loaded.path)), shownPath);
  } finally {
    await dir.handle.close();
  }
}

/** saveNotebook with `target` the name it writes through (the real path, or a pinned one). */
async function saveIn(loaded: LoadedNotebook, target: string, shownPath: string): Promise<SaveResult> {
  await assertWritable({ ...loaded, path: target }, shownPath);
  const removedLeftovers = await sweepLeftovers(target, false, loaded.path).catch(() => []);
  const { chunks, layout } = render(loaded.notebook, loaded.layout);
  const notKept: SaveResult["notKept"] = {};
  let written: Fingerprint | undefined;
  let otherLinks = 0;
  let tmp = "";
  try {
    // Synchronous calls but the fsync, which may take long (docs/notebook-tool.md, "Files"): each
    // of the others is microseconds here, where a round trip through libuv's thread pool was, under
    // load, a millisecond or more of an edit.
    const created = createTempBesideSync(target);
    tmp = created.path;
    const fd = created.fd;
    try {
      writeChunks(fd, chunks);
      // Owner first: a chown clears setuid/setgid, which the chmod after it sets again. Only root
      // may give a file away; anyone may give it a group they are in.
      const uid = process.getuid?.();
      const chown = (owner: number) => {
        try {
          fchownSync(fd, owner, loaded.gid);
        } catch {
          // not ours to give: said below (notKept)
        }
      };
      if (uid === 0) chown(loaded.uid);
      else if (uid !== undefined) chown(uid);
      fchmodSync(fd, loaded.mode);
      const got = fstatSync(fd);
      if (got.uid !== loaded.uid) notKept.uid = [loaded.uid, got.uid];
      if (got.gid !== loaded.gid) notKept.gid = [loaded.gid, got.gid];
      if ((got.mode & 0o7777) !== loaded.mode) notKept.mode = [loaded.mode, got.mode & 0o7777];
      await new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if (tmp) await unlink(tmp).catch(() => {});
    const code = (e as NodeJS.ErrnoException).code;
    throw new NotebookFileError(
      "write_failed",
      code === "EACCES" || code === "EPERM"
        ? `Cannot write notebook ${shownPath}: its folder is not writable for this user (a save writes a new file beside the notebook and renames it over the old one). Nothing was written.`
        : `Cannot write notebook ${shownPath}: ${(e as Error).message.replaceAll(dirname(target), dirname(loaded.path))}. Nothing was written.`,
    );
  }
  try {
    await withFileLock(target, async () => {
      const why = await changedSince(target, loaded.fingerprint, loaded.roots);
      if (why) throw conflict(why, shownPath);
      // Once more right before the rename, synchronously, so that only two system calls separate
      // the last look from the replace: a writer that does not take our lock can slip in only there.
      let last: BigIntStats;
      try {
        last = statSync(target, { bigint: true });
      } catch {
        throw conflict("it was deleted or moved", shownPath);
      }
      if (differs(last, loaded.fingerprint)) throw conflict("it was modified", shownPath);
      renameSync(tmp, target);
      otherLinks = Number(last.nlink) - 1;
      // After the rename (which updates ctime), under the lock: what the next save must find.
      let now: BigIntStats | undefined;
      try {
        now = statSync(target, { bigint: true });
      } catch {
        // gone already: the next save finds it changed
      }
      if (now) written = fingerprintOf(now, chunks);
    });
  } catch (e) {
    await unlink(tmp).catch(() => {});
    if (e instanceof NotebookFileError) throw e;
    // A pinned folder (/proc/self/fd/N) is named by its real path in the texts.
    const said = (e as Error).message.replaceAll(dirname(target), dirname(loaded.path));
    if (e instanceof LockTimeoutError) {
      throw new NotebookFileError("locked", `Notebook is busy: ${said}. Nothing was written; try again.`);
    }
    throw new NotebookFileError(
      "write_failed",
      `Cannot write notebook ${shownPath}: ${said}. Nothing was written.`,
    );
  }
  // The folder is not fsynced: the data was before the rename, so a crash leaves the old file or
  // the new one whole (as jupyter_server's saves do); a folder fsync would only make the new name
  // survive a power cut, at a few ms on every edit (docs/reliability.md, "No corrupt files").
  if (written) loaded.fingerprint = written;
  loaded.layout = layout;
  return { otherLinks, notKept, removedLeftovers };
}

function conflict(why: string, shownPath: string): NotebookFileError {
  return new NotebookFileError(
    "conflict",
    `Notebook changed on disk since it was read (${why}): ${shownPath}. Nothing was written; read it again and redo the change.`,
  );
}
