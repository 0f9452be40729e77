/**
 * The messages the `nbagent view` page receives about a notebook: one snapshot, then patches
 * (docs/view.md "Message protocol"). Shared by the page (src/view/page/) and the server that will
 * send them, so it imports nothing from the DOM or from Node.
 *
 * Cells are named by their nbformat `id` (the server gives one to a cell that has none), never by
 * position alone: a patch that names a cell the page does not have is reported, not guessed at.
 * Positions appear only where a cell goes (`index` of an insert, `to` of a move), counted in the
 * notebook as it is after every earlier message.
 */

export type CellType = "code" | "markdown" | "raw";

/** A multiline string as nbformat stores it: one string or a list of lines. */
export type MultilineString = string | string[];

/** A MIME bundle (`data` of display_data / execute_result): MIME type → value. */
export type MimeBundle = Record<string, unknown>;

export type ViewOutput =
  | { output_type: "stream"; name: "stdout" | "stderr"; text: MultilineString }
  | {
      output_type: "display_data";
      data: MimeBundle;
      metadata?: Record<string, unknown>;
      transient?: { display_id?: string };
    }
  | {
      output_type: "execute_result";
      data: MimeBundle;
      metadata?: Record<string, unknown>;
      execution_count?: number | null;
    }
  | { output_type: "error"; ename: string; evalue: string; traceback: string[] };

export interface ViewCell {
  id: string;
  cell_type: CellType;
  source: MultilineString;
  metadata?: Record<string, unknown>;
  /** Code cells. */
  outputs?: ViewOutput[];
  execution_count?: number | null;
  /** Markdown and raw cells: `attachment:NAME` images. */
  attachments?: Record<string, MimeBundle>;
}

/** Where a code cell is in its run, as the page shows it (the `[*]` prompt of Jupyter). */
export type RunState = "idle" | "queued" | "running";

/**
 * Which python session a notebook records (its cells are the session's calls, as export_notebook
 * writes them): the host it lives in and the session's key (runtime/session.ts SessionKey, as JSON).
 */
export interface SessionRef {
  hostId: string;
  key: Record<string, unknown>;
}

export type ViewMessage =
  /**
   * The whole notebook: replaces what the page had for `path`. A file's path is its absolute path;
   * a python session's notebook has a path of its own (`session:<hostId>:<keyText>`) and `session`.
   * `title` is what the page lists (the file's name, or "python session main").
   */
  | {
      kind: "notebook";
      path: string;
      cells: ViewCell[];
      language?: string;
      title?: string;
      session?: SessionRef;
      /** The ids of the cells running now (`[*]`), and of those queued to run (`[ ]`); the rest are idle. */
      running?: string[];
      queued?: string[];
    }
  | { kind: "cell-inserted"; path: string; index: number; cell: ViewCell }
  /** New source (and, when given, a new type) for a cell; its outputs stay. */
  | { kind: "cell-edited"; path: string; id: string; source: MultilineString; cell_type?: CellType }
  | { kind: "cell-moved"; path: string; id: string; to: number }
  | { kind: "cell-deleted"; path: string; id: string }
  /** A code cell was queued, started, or finished (then with its execution count). */
  | {
      kind: "cell-running";
      path: string;
      id: string;
      state: RunState;
      execution_count?: number | null;
    }
  /** One more output; a stream output continues the cell's last output when it is the same stream. */
  | { kind: "output-appended"; path: string; id: string; output: ViewOutput }
  /** Replaces output `index` of the cell (update_display_data). */
  | { kind: "output-replaced"; path: string; id: string; index: number; output: ViewOutput }
  /** clear_output: at once, or (`wait`) when the next output arrives. */
  | { kind: "outputs-cleared"; path: string; id: string; wait?: boolean }
  /** The page should forget the notebook (closed, deleted). */
  | { kind: "notebook-closed"; path: string };

export type ViewMessageKind = ViewMessage["kind"];

/** nbformat's multiline string as one string. */
export function joinSource(source: MultilineString | undefined): string {
  if (source === undefined) return "";
  return typeof source === "string" ? source : source.join("");
}

const KINDS: Record<ViewMessageKind, readonly string[]> = {
  notebook: ["path", "cells"],
  "cell-inserted": ["path", "index", "cell"],
  "cell-edited": ["path", "id", "source"],
  "cell-moved": ["path", "id", "to"],
  "cell-deleted": ["path", "id"],
  "cell-running": ["path", "id", "state"],
  "output-appended": ["path", "id", "output"],
  "output-replaced": ["path", "id", "index", "output"],
  "outputs-cleared": ["path", "id"],
  "notebook-closed": ["path"],
};

const OUTPUT_TYPES = new Set(["stream", "display_data", "execute_result", "error"]);
const CELL_TYPES = new Set(["code", "markdown", "raw"]);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkCell(cell: unknown, where: string): string | undefined {
  if (!isObject(cell)) return `${where} is not an object`;
  if (typeof cell.id !== "string" || cell.id === "") return `${where} has no id`;
  if (!CELL_TYPES.has(cell.cell_type as string))
    return `${where} has cell_type ${JSON.stringify(cell.cell_type)}`;
  if (cell.outputs !== undefined) {
    if (!Array.isArray(cell.outputs)) return `${where}.outputs is not a list`;
    for (const [i, o] of cell.outputs.entries()) {
      const bad = checkOutput(o, `${where}.outputs[${i}]`);
      if (bad) return bad;
    }
  }
  return undefined;
}

function checkOutput(output: unknown, where: string): string | undefined {
  if (!isObject(output) || !OUTPUT_TYPES.has(output.output_type as string))
    return `${where} is not an nbformat output`;
  return undefined;
}

/**
 * Checks that a value (parsed JSON off the wire) has the shape of a ViewMessage: its kind is known,
 * the fields that kind needs are there, cells have ids and known types. Returns the reason otherwise.
 */
export function checkViewMessage(value: unknown): { message: ViewMessage } | { error: string } {
  if (!isObject(value)) return { error: "a message must be a JSON object" };
  const kind = value.kind as ViewMessageKind;
  const fields = KINDS[kind];
  if (!fields) return { error: `unknown message kind ${JSON.stringify(value.kind)}` };
  for (const f of fields) if (value[f] === undefined) return { error: `${kind} has no ${f}` };
  if (typeof value.path !== "string") return { error: `${kind}: path must be a string` };
  if (kind === "notebook") {
    if (!Array.isArray(value.cells)) return { error: "notebook: cells must be a list" };
    for (const [i, c] of value.cells.entries()) {
      const bad = checkCell(c, `cells[${i}]`);
      if (bad) return { error: `notebook: ${bad}` };
    }
    for (const f of ["running", "queued"] as const) {
      const ids = value[f];
      if (ids !== undefined && !(Array.isArray(ids) && ids.every((id) => typeof id === "string")))
        return { error: `notebook: ${f} must be a list of cell ids` };
    }
  }
  if (kind === "cell-inserted") {
    const bad = checkCell(value.cell, "cell");
    if (bad) return { error: `${kind}: ${bad}` };
  }
  if (kind === "output-appended" || kind === "output-replaced") {
    const bad = checkOutput(value.output, "output");
    if (bad) return { error: `${kind}: ${bad}` };
  }
  for (const f of ["index", "to"] as const)
    if (value[f] !== undefined && !(Number.isInteger(value[f]) && (value[f] as number) >= 0))
      return { error: `${kind}: ${f} must be a whole number ≥ 0` };
  return { message: value as unknown as ViewMessage };
}
