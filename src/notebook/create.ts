/**
 * A new notebook file: nbformat 4.5 (cells carry ids) with the kernelspec and language_info of the
 * kernel it will run in, written in nbformat.write's layout. The file is created atomically and
 * only if nothing is at the path yet (a hard link of a fully written temp file, which fails when
 * the name exists), so a concurrent create or an existing file is never overwritten.
 */

import { basename, dirname, join } from "node:path";
import { tempPathBeside } from "../sys/atomic-write.js";
import { OutsideRootsError, openDirWithin, pinnedPath, realRoots } from "../sys/confined-path.js";
import { type FileHandle, link, open, stat, unlink } from "../sys/fs-promises.js";
import {
  type LoadedNotebook,
  loadNotebook,
  NotebookFileError,
  type OpenOptions,
  outsideRootsError,
} from "./file.js";
import type { JsonObject } from "./json.js";
import type { Notebook } from "./model.js";
import { serializeNotebook } from "./serialize.js";

/** A kernelspec as notebooks record it in metadata.kernelspec. */
export interface NotebookKernelSpec {
  name: string;
  display_name: string;
  language: string;
}

export const DEFAULT_KERNELSPEC: NotebookKernelSpec = {
  name: "python3",
  display_name: "Python 3 (ipykernel)",
  language: "python",
};

/** What ipykernel reports for Python that does not depend on the Python version. */
const PYTHON_LANGUAGE_INFO: JsonObject = {
  codemirror_mode: { name: "ipython", version: 3 },
  file_extension: ".py",
  mimetype: "text/x-python",
  name: "python",
  nbconvert_exporter: "python",
  pygments_lexer: "ipython3",
};

/** An empty nbformat 4.5 notebook for this kernel (its language's version is recorded by a run). */
export function newNotebook(kernel: NotebookKernelSpec = DEFAULT_KERNELSPEC): Notebook {
  const language = kernel.language.toLowerCase();
  const languageInfo = language === "python" ? { ...PYTHON_LANGUAGE_INFO } : { name: kernel.language };
  return {
    cells: [],
    metadata: {
      kernelspec: { display_name: kernel.display_name, language: kernel.language, name: kernel.name },
      language_info: languageInfo,
    },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

const NO_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);

async function writeNew(path: string, text: string): Promise<void> {
  const fh = await open(path, "wx", 0o666);
  try {
    await fh.writeFile(text, "utf8");
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Writes `nb` as a new file at `path` and loads it back. Throws NotebookFileError: "exists" when
 * something is already there, "not_found" when the folder does not exist, "outside_roots" when
 * `options.roots` are given and the folder leads out of them, "write_failed" otherwise. With roots
 * the file is made through the folder's checked descriptor (sys/confined-path.ts).
 */
export async function createNotebookFile(
  path: string,
  nb: Notebook,
  shownPath = path,
  options: OpenOptions = {},
): Promise<LoadedNotebook> {
  if (!options.roots) return createIn(path, nb, shownPath, path, {});
  const roots = realRoots(options.roots);
  let dir: FileHandle;
  try {
    dir = (await openDirWithin(dirname(path), roots, basename(path))).handle;
  } catch (e) {
    if (e instanceof OutsideRootsError) throw outsideRootsError(e);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      const folderStat = await stat(dirname(path)).catch(() => undefined);
      throw noFolder(shownPath, folderStat !== undefined);
    }
    throw new NotebookFileError(
      "write_failed",
      `Cannot create notebook ${shownPath}: ${(e as Error).message}`,
    );
  }
  try {
    return await createIn(join(pinnedPath(dir), basename(path)), nb, shownPath, path, { roots });
  } finally {
    await dir.close();
  }
}

function noFolder(shownPath: string, exists: boolean): NotebookFileError {
  const why = exists
    ? `${dirname(shownPath)} is not a folder`
    : `its folder ${dirname(shownPath)} does not exist`;
  return new NotebookFileError(
    "not_found",
    `Cannot create notebook ${shownPath}: ${why}. Nothing was created; create the folder first (for example with the python tool).`,
  );
}

/** createNotebookFile through `path` (the path, or a pinned name for it); `real` names it afterwards. */
async function createIn(
  path: string,
  nb: Notebook,
  shownPath: string,
  real: string,
  options: OpenOptions,
): Promise<LoadedNotebook> {
  const folder = dirname(path);
  const folderStat = await stat(folder).catch(() => undefined);
  if (!folderStat?.isDirectory()) throw noFolder(shownPath, folderStat !== undefined);
  const text = serializeNotebook(nb);
  const tmp = tempPathBeside(path);
  try {
    await writeNew(tmp, text);
    try {
      await link(tmp, path);
    } catch (e) {
      // Filesystems without hard links: an exclusive create of the file itself.
      if (!NO_LINKS.has((e as NodeJS.ErrnoException).code ?? "")) throw e;
      await writeNew(path, text);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") {
      throw new NotebookFileError(
        "exists",
        `Cannot create notebook ${shownPath}: something appeared at that path meanwhile. Nothing was written; read it and try again.`,
      );
    }
    throw new NotebookFileError(
      "write_failed",
      `Cannot create notebook ${shownPath}: ${(e as Error).message.replaceAll(folder, dirname(real))}`,
    );
  } finally {
    await unlink(tmp).catch(() => {});
  }
  return loadNotebook(path, shownPath, options);
}
