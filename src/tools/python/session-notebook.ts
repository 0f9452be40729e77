/**
 * A python session's record (runtime/session-record.ts) as a notebook (docs/python-tool.md, "The
 * session as a notebook"): every recorded cell a code cell with its outputs and execution_count as
 * Jupyter saves them, a markdown cell wherever the kernel's state was lost (so the reader knows the
 * cells above did not feed the ones below) and where a cell's outputs were left out; kernelspec and
 * language_info as the kernel reported them. Written as a new file only (never over one), atomically.
 */

import { dirname } from "node:path";
import {
  type Cell,
  createNotebookFile,
  DEFAULT_KERNELSPEC,
  type JsonValue,
  type Notebook,
  NotebookFileError,
  newNotebook,
  splitLines,
  splitOutputLines,
} from "../../notebook/index.js";
import type { KernelRecordEvent, RecordEntry, SessionRecord } from "../../runtime/session-record.js";
import { checkWithin, OutsideRootsError } from "../../sys/confined-path.js";
import { stat } from "../../sys/fs-promises.js";
import { inUnit, pluralBare } from "../../sys/units.js";
import { fileErrorText, outsideRootsText } from "../sandbox-paths.js";

/** What an export wrote. */
export interface SessionExport {
  path: string;
  /** Code cells written. */
  cells: number;
  /** Points where the kernel's state was lost (each a markdown cell). */
  stateLost: number;
  /** Cells whose outputs were left out (their 1-based position among the code cells). */
  omitted: { cell: number; bytes: number }[];
}

/** An export that could not be made: its message is the model's text (nothing was written). */
export class SessionExportError extends Error {}

/** The markdown a kernel entry puts in the notebook (none for a first start or a re-attach). */
function kernelNote(event: KernelRecordEvent, cellsBefore: number): string | undefined {
  const gone = "state from the cells above (variables, imports) is gone from here on.";
  switch (event.kind) {
    case "start":
      return cellsBefore ? `**New kernel here**: the session's earlier kernel ended; ${gone}` : undefined;
    case "attach":
      return undefined;
    case "reset":
      return event.by === "kernels-tool"
        ? `**Kernel restarted here** (through the kernels tool): ${gone}`
        : `**Kernel restarted here (reset)**: ${gone}`;
    case "restart":
      return `**Kernel restarted here**: it had died${event.reason ? ` (${event.reason})` : ""}; ${gone}`;
    case "died":
      return event.restarted
        ? `**The kernel died while the cell above ran** (${event.reason}) and was restarted: ${gone}`
        : `**The kernel died while the cell above ran** (${event.reason}): ${gone}`;
    case "interrupt":
      return `**Kernel restarted here**: the cell above did not stop when interrupted; ${gone}`;
  }
}

/** The notebook of a record's entries, with what went into it. */
export function sessionNotebook(entries: readonly RecordEntry[]): {
  notebook: Notebook;
  cells: number;
  stateLost: number;
  omitted: { cell: number; bytes: number }[];
} {
  const kernels = entries.filter((e) => e.type === "kernel");
  const spec = [...kernels].reverse().find((k) => k.kernelspec)?.kernelspec;
  const nb = newNotebook(spec ?? DEFAULT_KERNELSPEC);
  const info = [...kernels].reverse().find((k) => k.language_info)?.language_info;
  if (info)
    nb.metadata = { ...(nb.metadata as object), language_info: info as JsonValue } as Notebook["metadata"];
  let cells = 0;
  let stateLost = 0;
  const omitted: { cell: number; bytes: number }[] = [];
  // Ids by position (unique within the notebook; newCellId would scan every cell each time).
  const add = (type: "code" | "markdown", source: string): Cell => {
    const cell: Cell = {
      cell_type: type,
      id: `cell-${nb.cells.length + 1}`,
      metadata: {},
      source: splitLines(source),
    };
    if (type === "code") {
      cell.execution_count = null;
      cell.outputs = [];
    }
    nb.cells.push(cell);
    return cell;
  };
  for (const e of entries) {
    if (e.type === "kernel") {
      const note = kernelNote(e.event, cells);
      if (note) {
        add("markdown", note);
        stateLost++;
      }
      continue;
    }
    const cell = add("code", e.source);
    cells++;
    cell.execution_count = e.execution_count;
    const outputs = e.outputs.map((o) => {
      const copy = { ...o };
      splitOutputLines(copy);
      return copy;
    });
    cell.outputs = outputs as unknown as JsonValue;
    if (e.omitted) {
      omitted.push({ cell: cells, bytes: e.omitted.bytes });
      const why =
        e.omitted.why === "record-full"
          ? `the session's record had reached its ${inUnit(e.omitted.limit, "MB", 1)}`
          : `over the ${inUnit(e.omitted.limit, "MB", 1)} one cell's outputs may take in the record`;
      const where = e.omitted.artifact
        ? ` Its text output is in ${e.omitted.artifact} (nbagent artifact).`
        : "";
      add(
        "markdown",
        `*The outputs of the cell above (${inUnit(e.omitted.bytes, "MB", 1)}) are not saved here: ${why}.${where}*`,
      );
    }
  }
  return { notebook: nb, cells, stateLost, omitted };
}

/**
 * Checks the target before anything runs: a .ipynb path in an existing folder with nothing there
 * (and, under --sandbox, not leading out of `roots`: sandbox-paths.ts).
 */
export async function checkExportTarget(
  path: string,
  shown: string,
  roots?: readonly string[],
): Promise<void> {
  if (!path.toLowerCase().endsWith(".ipynb"))
    throw new SessionExportError(
      `cannot export to ${shown}: the path must end in .ipynb. Nothing was written.`,
    );
  if (roots) {
    try {
      await checkWithin(path, roots);
    } catch (err) {
      if (err instanceof OutsideRootsError)
        throw new SessionExportError(`cannot export to ${outsideRootsText(shown, err.outside)}`);
      throw err;
    }
  }
  const there = await stat(path).catch(() => undefined);
  if (there)
    throw new SessionExportError(
      `cannot export to ${shown}: it already exists, and an export never replaces a file. Nothing was written; pass a new path.`,
    );
  const folder = await stat(dirname(path)).catch(() => undefined);
  if (!folder?.isDirectory())
    throw new SessionExportError(
      `cannot export to ${shown}: its folder ${dirname(shown)} ${folder ? "is not a folder" : "does not exist"}. Nothing was written; create the folder first.`,
    );
}

/** Writes the record as a new notebook at `path` (shown to the model as `shown`). */
export async function exportSessionNotebook(
  record: SessionRecord,
  path: string,
  shown: string,
  roots?: readonly string[],
): Promise<SessionExport> {
  await checkExportTarget(path, shown, roots);
  const built = sessionNotebook(await record.read());
  try {
    await createNotebookFile(path, built.notebook, shown, { roots });
  } catch (err) {
    if (err instanceof NotebookFileError)
      throw new SessionExportError(
        err.outside ? `cannot export to ${fileErrorText(err, shown)}` : err.message,
      );
    throw err;
  }
  return { path: shown, cells: built.cells, stateLost: built.stateLost, omitted: built.omitted };
}

/** The result line of an export. */
export function exportText(e: SessionExport, of?: string): string {
  const cells = `${pluralBare(e.cells, "cell")}`;
  const what = of ? `the ${cells} of ${of}` : `this session's ${cells}`;
  const parts = [`Exported ${what} to ${e.path} (with their outputs).`];
  if (e.stateLost)
    parts.push(
      `The kernel's state was lost ${e.stateLost === 1 ? "once" : `${e.stateLost} times`}; a markdown cell marks where.`,
    );
  if (e.omitted.length)
    parts.push(
      `Left out: the outputs of cell${e.omitted.length === 1 ? "" : "s"} ${e.omitted.map((o) => o.cell).join(", ")} (too large; a markdown cell says so).`,
    );
  return parts.join(" ");
}
