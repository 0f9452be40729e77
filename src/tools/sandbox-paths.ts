/**
 * Where the notebook tools may read and write under --sandbox, and the words for a path refused
 * there (docs/isolation.md, "The notebook and artifact tools under --sandbox"). The sandbox lets a
 * kernel write its working directory — the session's, or a folder below it — so a kernel may have
 * planted any link in it: the tools open a notebook only when where it really is (checked on the
 * open descriptor, sys/confined-path.ts) lies inside that folder. Without the sandbox: no roots,
 * links are followed as docs/notebook-tool.md says.
 */
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, resolve, sep } from "node:path";
import type { NotebookFileError } from "../notebook/index.js";
import type { OutsidePath } from "../sys/confined-path.js";

/** The roots for a host whose kernels run in the sandbox (or not): the session's folder. */
export function sandboxRoots(sandboxed: boolean, cwd: string): string[] | undefined {
  return sandboxed ? [cwd] : undefined;
}

/** "/a" or "/a or /b". */
function rootsText(roots: readonly string[]): string {
  return roots.join(" or ");
}

/** Why `shownPath` was refused, for the model (without the Error: prefix). */
export function outsideRootsText(shownPath: string, o: OutsidePath): string {
  const roots = rootsText(o.roots);
  const tail = `Nothing was read or written.`;
  if (!o.link) {
    return `${shownPath} is outside what the sandbox lets a kernel write: ${o.real} is not inside ${roots}. Under --sandbox notebooks are read and written only inside ${roots}. ${tail}`;
  }
  const how =
    o.link.link === o.path
      ? `it is a symbolic link to ${o.link.target}`
      : `it goes through the symbolic link ${o.link.link} -> ${o.link.target}`;
  const leads = resolve(dirname(o.link.link), o.link.target) === o.real ? "" : `, so it leads to ${o.real}`;
  return `${shownPath} resolves outside what the sandbox lets a kernel write: ${how}${leads}, which is not inside ${roots}. A kernel can plant such a link, so under --sandbox no link out of ${roots} is followed. ${tail}`;
}

/** A load/save failure's text: its message, or for a path out of the roots the words above. */
export function fileErrorText(
  e: NotebookFileError,
  shownPath: string,
  where?: { path: string; cwd: string },
): string {
  if (e.outside) return outsideRootsText(shownPath, e.outside);
  return where && PATH_ERRORS.has(e.code)
    ? withWhere(e.message, pathWhere(shownPath, where.path, where.cwd))
    : e.message;
}

/**
 * Under --sandbox, why a python call's `cwd` is refused (undefined when it is inside the roots): the
 * kernel's working directory is bound writable into its sandbox, so one outside would widen it. The
 * real path counts (a kernel may have planted a link to a folder outside).
 */
export function cwdOutsideRoots(cwd: string, roots: readonly string[]): string | undefined {
  const real = realpathSync(cwd);
  const inside = (root: string) => {
    const r = realpathSync(root);
    return real === r || real.startsWith(r.endsWith(sep) ? r : r + sep);
  };
  if (roots.some(inside)) return undefined;
  const via = real === resolve(cwd) ? "" : ` (it leads to ${real})`;
  return `cwd ${cwd} is outside what the sandbox lets a kernel write${via}: under --sandbox a kernel's working directory must be inside ${rootsText(roots)}, since it becomes writable to the kernel. Pass a folder inside ${rootsText(roots)}, or leave cwd out. Nothing was run.`;
}

/**
 * Where a path the model gave leads, for errors about the path itself (not found, not a file, no
 * folder to create it in): the full path and the folder relative paths resolve against — the model
 * of an MCP client does not know the server's working directory.
 */
export function pathWhere(shownPath: string, path: string, cwd: string): string {
  const against = `relative paths resolve against ${cwd}, this session's working directory`;
  if (isAbsolute(shownPath)) return `(${against.charAt(0).toUpperCase()}${against.slice(1)}.)`;
  return `Full path: ${path} (${against}).`;
}

/** A path error's text with where the path leads (pathWhere) after its first sentence's end. */
export function withWhere(message: string, where: string): string {
  return /[.)]$/.test(message) ? `${message} ${where}` : `${message}. ${where}`;
}

/** The load failures that are about the path (where it leads is worth saying). */
export const PATH_ERRORS = new Set(["not_found", "not_a_file", "unreadable"]);
