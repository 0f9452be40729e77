/**
 * Opening files and folders only inside given roots (Linux), for the file tools under --sandbox
 * (docs/isolation.md, "The notebook and artifact tools under --sandbox"): a kernel may plant links
 * anywhere it can write, and may swap a path's components while the host looks at it, so where a
 * path leads is never taken from a realpath made before the open. Instead the path is opened with
 * O_PATH — which reads nothing and has no side effect even on a FIFO or a device — and the
 * descriptor's own path (/proc/self/fd/N) is checked against the roots; only then is the file
 * reopened for reading through that descriptor (the same inode, whatever the path holds by then),
 * and a folder is used through `/proc/self/fd/N/…` names, so a later swap cannot move the work
 * elsewhere. A refusal is an `OutsideRootsError` carrying where the path led and the link that led
 * it there (typed; tools/ words it).
 */
import { constants, realpathSync, type Stats } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { type FileHandle, lstat, open, readlink } from "./fs-promises.js";

/** Linux's O_PATH (the same on x86, arm and arm64); Node does not export it. */
export const O_PATH = 0o10000000;

/** A symbolic link met on the way: where it is and what it holds. */
export interface LinkStep {
  link: string;
  target: string;
}

/** A path that leads outside the roots: where to, through which link (if any). */
export interface OutsidePath {
  /** The path as asked for (absolute). */
  path: string;
  /** Where it leads (the descriptor's path, or as far as it resolves when it does not exist). */
  real: string;
  /** The link that led out of the roots (or the first link followed), when one did. */
  link?: LinkStep;
  /** The roots (real paths). */
  roots: readonly string[];
}

export class OutsideRootsError extends Error {
  constructor(readonly outside: OutsidePath) {
    super(`${outside.path} leads to ${outside.real}, outside ${outside.roots.join(", ")}`);
  }
}

/** The roots as real paths (a root that does not exist is kept as given, resolved). */
export function realRoots(roots: readonly string[]): string[] {
  return roots.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      return resolve(r);
    }
  });
}

/** Whether the absolute path `p` is one of the roots or below one (compared by path components). */
export function isWithin(p: string, roots: readonly string[]): boolean {
  return roots.some((r) => p === r || p.startsWith(r.endsWith("/") ? r : `${r}/`));
}

/** Where an open descriptor really is (its /proc/self/fd link). */
export function descriptorPath(fd: number): Promise<string> {
  return readlink(`/proc/self/fd/${fd}`);
}

/** A name inside an open folder that always means that folder, whatever its path holds later. */
export function pinnedPath(dir: FileHandle): string {
  return `/proc/self/fd/${dir.fd}`;
}

/**
 * Follows `path` component by component (for the message only: nothing is opened): where it leads,
 * as far as it exists, and the link that led out of the roots — the first link found inside the
 * roots whose target is outside them, else the first link followed.
 */
export async function traceLinks(
  path: string,
  roots: readonly string[],
): Promise<{ real: string; link?: LinkStep }> {
  const pending = resolve(path).split("/").filter(Boolean);
  let cur = "/";
  let first: LinkStep | undefined;
  let culprit: LinkStep | undefined;
  for (let hops = 0; pending.length > 0; ) {
    const name = pending.shift() as string;
    if (name === ".") continue;
    if (name === "..") {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, name);
    let st: Stats;
    try {
      st = await lstat(next);
    } catch {
      return { real: join(next, ...pending), link: culprit ?? first };
    }
    if (!st.isSymbolicLink() || ++hops > 40) {
      cur = next;
      continue;
    }
    const target = await readlink(next);
    const step = { link: next, target };
    first ??= step;
    const to = isAbsolute(target) ? resolve(target) : resolve(cur, target);
    if (!culprit && isWithin(next, roots) && !isWithin(to, roots)) culprit = step;
    pending.unshift(...target.split("/").filter(Boolean));
    if (isAbsolute(target)) cur = "/";
  }
  return { real: cur, link: culprit ?? first };
}

async function outside(
  path: string,
  real: string | undefined,
  roots: readonly string[],
): Promise<OutsideRootsError> {
  const traced = await traceLinks(path, roots).catch(() => ({ real: path, link: undefined }));
  return new OutsideRootsError({
    path: resolve(path),
    real: real ?? traced.real,
    ...(traced.link ? { link: traced.link } : {}),
    roots,
  });
}

/**
 * Opens an existing file for `flags` only if it is inside the roots (see the module comment).
 * `check` sees its stat before it is opened for real (throw to refuse, e.g. a FIFO). Throws
 * OutsideRootsError, or the open's own error (ENOENT: nothing there — or, for a dangling link
 * leading out of the roots, OutsideRootsError).
 */
export async function openFileWithin(
  path: string,
  roots: readonly string[],
  flags: number,
  check?: (st: Stats) => void,
): Promise<{ handle: FileHandle; real: string }> {
  let where: FileHandle;
  try {
    where = await open(path, O_PATH);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") await refuseDanglingOut(path, roots);
    throw e;
  }
  try {
    const real = await descriptorPath(where.fd);
    if (!isWithin(real, roots)) throw await outside(path, real, roots);
    check?.(await where.stat());
    const handle = await open(pinnedPath(where), flags);
    return { handle, real };
  } finally {
    await where.close();
  }
}

/** A missing path that is (or goes through) a link out of the roots: refused as such. */
async function refuseDanglingOut(path: string, roots: readonly string[]): Promise<void> {
  const traced = await traceLinks(path, roots).catch(() => undefined);
  if (traced?.link && !isWithin(traced.real, roots)) throw await outside(path, traced.real, roots);
}

/**
 * Opens a folder (O_PATH) only if it is inside the roots; its `pinnedPath` then names it for
 * creating, renaming and listing files in it. A refusal names the file `name` in it (the path the
 * caller was asked for). The caller closes the handle.
 */
export async function openDirWithin(
  dir: string,
  roots: readonly string[],
  name?: string,
): Promise<{ handle: FileHandle; real: string }> {
  const asked = name === undefined ? dir : join(dir, name);
  let handle: FileHandle;
  try {
    handle = await open(dir, O_PATH | constants.O_DIRECTORY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") await refuseDanglingOut(asked, roots);
    throw e;
  }
  try {
    const real = await descriptorPath(handle.fd);
    if (!isWithin(real, roots))
      throw await outside(asked, name === undefined ? real : join(real, name), roots);
    return { handle, real };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/**
 * Refuses early (OutsideRootsError), before anything is done, a path — there or not yet — that
 * leads out of the roots. Opens nothing, so it promises nothing: the opens above check again.
 */
export async function checkWithin(path: string, roots: readonly string[]): Promise<void> {
  const traced = await traceLinks(path, roots);
  if (!isWithin(traced.real, roots)) throw await outside(path, traced.real, roots);
}
