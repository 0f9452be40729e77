/**
 * Files in folders that code in a kernel may write (docs/artifacts.md, "What a kernel can plant"):
 * created only by descriptor with O_CREAT|O_EXCL|O_NOFOLLOW, read only through a descriptor opened
 * with O_NOFOLLOW|O_NONBLOCK and checked (fstat) to be a regular file of this user, folders used only
 * when they are real directories of this user. Nothing here ever follows a link or truncates.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, type Stats } from "node:fs";
import { type FileHandle, open } from "../sys/fs-promises.js";

const { O_RDONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** Why a path was not opened: a link, something that is not a regular file, or another user's file. */
export type Refusal = "symlink" | "not_file" | "foreign";

export class RefusedFileError extends Error {
  constructor(
    readonly refusal: Refusal,
    readonly path: string,
    /** The owner's uid, for "foreign". */
    readonly ownerUid?: number,
  ) {
    super(
      refusal === "symlink"
        ? `${path} is a symbolic link; it is not followed`
        : refusal === "not_file"
          ? `${path} is not a regular file`
          : `${path} belongs to uid ${ownerUid}, not to this user`,
    );
  }
}

/** This process's uid (undefined where there are none: Windows). */
export function currentUid(): number | undefined {
  return process.getuid?.();
}

/** A refusal for what fstat/lstat saw, or undefined for a regular file of this user. */
function refusalOf(st: Stats): Refusal | undefined {
  if (st.isSymbolicLink()) return "symlink";
  if (!st.isFile()) return "not_file";
  const uid = currentUid();
  if (uid !== undefined && st.uid !== uid) return "foreign";
  return undefined;
}

/** Whether lstat saw an entry owned by this user (anything, links included). */
export function ownedByMe(st: Stats): boolean {
  const uid = currentUid();
  return uid === undefined || st.uid === uid;
}

/**
 * Creates `path` for writing (and reading back what was written): fails with EEXIST when anything
 * is there already (a file, a dangling or live link), never truncates, never follows.
 */
export function createExclusive(path: string, mode = 0o600): number {
  return openSync(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
}

/**
 * Makes `dir` (and its parents) when missing, then makes sure it is a real directory of this user,
 * not a link to one: a link or another user's folder throws (ENOTDIR-like, with the reason).
 */
export function ensureOwnDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  checkOwnDir(dir);
}

/** Throws unless `dir` is a real directory (lstat: not a link) owned by this user. */
export function checkOwnDir(dir: string): void {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw new RefusedFileError("symlink", dir);
  if (!st.isDirectory())
    throw Object.assign(new Error(`ENOTDIR: not a directory, '${dir}'`), { code: "ENOTDIR" });
  if (!ownedByMe(st)) throw new RefusedFileError("foreign", dir, st.uid);
}

/** Whether `dir` is a real directory of this user (false for links, files, missing). */
export function isOwnDir(dir: string): boolean {
  try {
    checkOwnDir(dir);
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens a regular file of this user for reading: undefined when nothing is there, RefusedFileError
 * for a link (ELOOP under O_NOFOLLOW), a FIFO, device or folder (O_NONBLOCK: a FIFO never blocks the
 * open), or another user's file.
 */
export async function openOwnedFile(path: string): Promise<{ handle: FileHandle; stats: Stats } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, READ_FLAGS);
  } catch (err) {
    return refusedOrMissing(err, path);
  }
  try {
    const stats = await handle.stat();
    const refusal = refusalOf(stats);
    if (refusal) throw new RefusedFileError(refusal, path, stats.uid);
    return { handle, stats };
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

/** The same check without keeping the file open: true when it would open, false when missing. */
export function checkOwnedFileSync(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (err) {
    return refusedOrMissing(err, path) !== undefined;
  }
  try {
    const st = fstatSync(fd);
    const refusal = refusalOf(st);
    if (refusal) throw new RefusedFileError(refusal, path, st.uid);
    return true;
  } finally {
    closeSync(fd);
  }
}

function refusedOrMissing(err: unknown, path: string): undefined {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return undefined;
  if (code === "ELOOP") throw new RefusedFileError("symlink", path);
  if (code === "ENXIO" || code === "EISDIR") throw new RefusedFileError("not_file", path);
  throw err;
}
