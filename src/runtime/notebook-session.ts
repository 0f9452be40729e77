/**
 * A notebook's own kernel session (one per notebook file, as in Jupyter): keyed by the notebook's
 * real path, working directory = the notebook's directory, kernel from its kernelspec metadata.
 * The notebook tool's run action and the python tool's notebook_path share it (and its queue).
 */
import { dirname } from "node:path";
import type { Notebook } from "../notebook/index.js";
import { DisplayRegistry } from "./collector.js";
import type { SessionSpec } from "./session.js";

export function notebookKernelName(nb: Notebook, fallback = "python3"): string {
  const spec = (nb.metadata as { kernelspec?: { name?: unknown } } | undefined)?.kernelspec;
  return typeof spec?.name === "string" && spec.name ? spec.name : fallback;
}

export function notebookSessionSpec(
  realPath: string,
  nb: Notebook,
  sessionId: string,
  cwd?: string,
): SessionSpec {
  return {
    key: `notebook\0${realPath}`,
    sessionId,
    cwd: cwd ?? dirname(realPath),
    kernelName: notebookKernelName(nb),
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
