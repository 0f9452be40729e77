/**
 * A notebook's own kernel session (one per notebook file, as in Jupyter): keyed by the notebook's
 * real path, working directory = the notebook's directory, kernel from its kernelspec metadata.
 * The notebook tool's run action and the python tool's notebook_path share it (and its queue).
 */
import { dirname } from "node:path";
import type { Notebook } from "../notebook/index.js";
import { DisplayRegistry } from "./collector.js";
import { notebookKey, type SessionSpec } from "./session.js";

export interface NotebookKernelChoice {
  name: string;
  /** Set when the notebook's own kernelspec is not installed and another one of its language runs it. */
  notice?: string;
}

/**
 * The kernel a notebook runs in: its kernelspec's name (the default, `fallback`, when it names none).
 * Notebooks come from other machines with names like "conda-env-x-py" or ".venv": when that name is
 * not installed here and the notebook is Python, the default runs it, and the notice says so. The
 * default is python3 unless NBAGENT_KERNEL names another (a gateway whose Python kernelspec is
 * called otherwise, e.g. Enterprise Gateway's python_kubernetes).
 */
export async function chooseNotebookKernel(
  nb: Notebook,
  installed: () => Promise<string[]>,
  fallback = "python3",
): Promise<NotebookKernelChoice> {
  const metadata = (nb.metadata ?? {}) as {
    kernelspec?: { name?: unknown; language?: unknown };
    language_info?: { name?: unknown };
  };
  const wanted = metadata.kernelspec?.name;
  if (typeof wanted !== "string" || !wanted) return { name: fallback };
  // Local kernels always have these (kernel/local/kernelspec.ts); elsewhere the list says.
  if (fallback === "python3" && (wanted === "python3" || wanted === "python")) return { name: wanted };
  const names = await installed().catch(() => [] as string[]);
  if (names.length === 0 || names.includes(wanted)) return { name: wanted };
  const language = String(metadata.kernelspec?.language ?? metadata.language_info?.name ?? "").toLowerCase();
  if (language !== "python" || !names.includes(fallback)) return { name: wanted };
  return {
    name: fallback,
    notice: `The notebook's kernelspec "${wanted}" is not installed here; it runs with ${fallback} (the notebook is Python). Installed: ${names.join(", ")}.`,
  };
}

/** The notebook's session (keyed by its real path) and, when its kernelspec was replaced, why. */
export async function notebookSession(
  realPath: string,
  nb: Notebook,
  sessionId: string,
  installed: () => Promise<string[]>,
  cwd?: string,
  fallback?: string,
): Promise<{ spec: SessionSpec; notice?: string }> {
  const kernel = await chooseNotebookKernel(nb, installed, fallback);
  return {
    // No prelude: a notebook's kernel behaves as Jupyter's does, so a notebook that passes here
    // passes in Jupyter and under `nbagent run` (docs/kernel-state.md).
    spec: {
      key: notebookKey(realPath),
      sessionId,
      cwd: cwd ?? dirname(realPath),
      kernelName: kernel.name,
      prelude: false,
    },
    notice: kernel.notice,
  };
}

/** display_id maps per notebook, living as long as the host (updates can reach cells of earlier runs). */
export class DisplayRegistries {
  private readonly byPath = new Map<string, DisplayRegistry>();

  get(realPath: string): DisplayRegistry {
    let r = this.byPath.get(realPath);
    if (!r) {
      r = new DisplayRegistry();
      this.byPath.set(realPath, r);
    }
    return r;
  }
}
