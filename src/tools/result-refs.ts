/**
 * The ids a result's text names, read from its details (not its text): the artifacts whose
 * `artifact://<id>` a cut notice gives, and the run id of a call that goes on in the background.
 * Hosts hand them on as data (MCP `_meta`: docs/mcp.md); the text the model reads is unchanged.
 */
import type { RunInfo } from "./runs/registry.js";

export interface ToolRefs {
  /** Artifact ids the text names (as artifact://<id>), in the order first named. */
  artifacts: string[];
  /** The run id the text gives (a call still running, or a run's result through the runs tool). */
  runId?: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The refs of a python call's or notebook run's details (also as the runs tool or an edit with
 * execute: true carries them): the artifact of each cell whose output was cut, and the run.
 */
export function cellRunRefs(details: unknown): ToolRefs {
  const refs: ToolRefs = { artifacts: [] };
  if (!isObject(details)) return refs;
  const run = details.run;
  // A notebook edit/insert with execute: true keeps the run's details under `run`.
  if (isObject(run) && Array.isArray(run.cells)) return cellRunRefs(run);
  if (isObject(run) && typeof (run as Partial<RunInfo>).id === "string") refs.runId = run.id as string;
  const cells = Array.isArray(details.cells) ? details.cells : [];
  for (const cell of cells) {
    const id = isObject(cell) && isObject(cell.output) ? cell.output.artifactId : undefined;
    if (typeof id === "string" && !refs.artifacts.includes(id)) refs.artifacts.push(id);
  }
  return refs;
}
