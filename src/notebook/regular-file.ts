/**
 * Opening a notebook for reading without ever blocking: a FIFO, device or socket at the path is
 * refused before it is opened (stat), and the open itself is non-blocking, checked with fstat, so a
 * FIFO swapped in between cannot hang the process. The calls are synchronous: each is a few
 * microseconds on a local file, where libuv's thread pool made each a round trip between threads
 * (under load, milliseconds of a short command). Rules: docs/notebook-tool.md ("Files").
 */
import { closeSync, constants, fstatSync, openSync, type Stats, statSync } from "node:fs";

/** What is at a path that is not a regular file, in words the user knows. */
export type FileKind =
  | "folder"
  | "named pipe (FIFO)"
  | "socket"
  | "character device"
  | "block device"
  | "special file";

export function kindOf(
  st: Pick<Stats, "isDirectory" | "isFIFO" | "isSocket" | "isCharacterDevice" | "isBlockDevice">,
): FileKind {
  if (st.isDirectory()) return "folder";
  if (st.isFIFO()) return "named pipe (FIFO)";
  if (st.isSocket()) return "socket";
  if (st.isCharacterDevice()) return "character device";
  if (st.isBlockDevice()) return "block device";
  return "special file";
}

/** Thrown when the path is not a regular file; nothing was opened (or it was closed at once). */
export class NotRegularFileError extends Error {
  constructor(readonly kind: FileKind) {
    super(`not a regular file (a ${kind})`);
  }
}

/** Opens an existing regular file for reading (a descriptor); NotRegularFileError for anything else. */
export function openRegular(path: string): number {
  const before = statSync(path);
  if (!before.isFile()) throw new NotRegularFileError(kindOf(before));
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegularFileError(kindOf(st));
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}
