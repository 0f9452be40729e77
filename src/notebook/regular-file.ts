/**
 * Opening a notebook for reading without ever blocking: a FIFO, device or socket at the path is
 * refused before it is opened (stat), and the open itself is non-blocking, checked with fstat, so a
 * FIFO swapped in between cannot hang a worker thread (which would also keep the process from
 * exiting). Rules: docs/notebook-tool.md ("Files").
 */
import { constants, type Stats } from "node:fs";
import { type FileHandle, open, stat } from "node:fs/promises";

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

/** Opens an existing regular file for reading; NotRegularFileError for anything else. */
export async function openRegular(path: string): Promise<FileHandle> {
  const before = await stat(path);
  if (!before.isFile()) throw new NotRegularFileError(kindOf(before));
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NotRegularFileError(kindOf(st));
    return fh;
  } catch (e) {
    await fh.close();
    throw e;
  }
}
