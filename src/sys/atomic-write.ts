/**
 * Replacing a file atomically: the new contents go into a fresh temp file beside it, which is then
 * renamed over the file, so a reader sees the old file or the new one, never a torn one.
 *
 * The temp file is `.<name>.nbagent-<pid>-<hex>.tmp` in the target's folder (the pid tells a sweep
 * whether its writer is gone), created with O_CREAT|O_EXCL|O_NOFOLLOW: nothing already at that name
 * (a planted link included) is ever opened or followed. The rename replaces whatever is at the
 * target, a link included, without following it.
 */

import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { randomBytes } from "./crypto.js";
import { type FileHandle, open, rename, unlink } from "./fs-promises.js";

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** A new, unused temp name beside `target` (see the module comment). */
export function tempPathBeside(target: string): string {
  return join(
    dirname(target),
    `.${basename(target)}.nbagent-${process.pid}-${randomBytes(4).toString("hex")}.tmp`,
  );
}

/** createTempBeside, synchronously: the path and a descriptor. */
export function createTempBesideSync(target: string, mode = 0o600): { path: string; fd: number } {
  const path = tempPathBeside(target);
  return { path, fd: openSync(path, CREATE_FLAGS, mode) };
}

/** Creates a fresh temp file beside `target` for writing (exclusive, never following a link). */
export async function createTempBeside(
  target: string,
  mode = 0o600,
): Promise<{ path: string; handle: FileHandle }> {
  const path = tempPathBeside(target);
  return { path, handle: await open(path, CREATE_FLAGS, mode) };
}

export interface AtomicWriteOptions {
  /** The new file's mode, set exactly (the umask does not narrow it). Default 0o600. */
  mode?: number;
  /** fsync the data before the rename, so a crash cannot leave an empty file under the name. */
  fsync?: boolean;
}

/** Replaces `target` with `data` atomically (see the module comment). */
export async function writeFileAtomic(
  target: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const mode = options.mode ?? 0o600;
  const { path, handle } = await createTempBeside(target, mode);
  try {
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      if (options.fsync) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(path, target);
  } catch (e) {
    await unlink(path).catch(() => {});
    throw e;
  }
}

/** writeFileAtomic, synchronously. */
export function writeFileAtomicSync(
  target: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): void {
  const mode = options.mode ?? 0o600;
  const path = tempPathBeside(target);
  const fd = openSync(path, CREATE_FLAGS, mode);
  try {
    try {
      const bytes = typeof data === "string" ? Buffer.from(data) : data;
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      fchmodSync(fd, mode);
      if (options.fsync) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(path, target);
  } catch (e) {
    try {
      unlinkSync(path);
    } catch {
      /* gone */
    }
    throw e;
  }
}
