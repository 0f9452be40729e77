/**
 * Parameters of the `notebook` tool: the TypeBox schema the model sees, and the check execute()
 * runs before touching anything (integrations may hand over unvalidated JSON). The check is the
 * schema's (no unknown keys, types, ranges — as the python tool does) with messages that name the
 * field and, for a near miss, the right one; then the rules between fields. docs/notebook-tool.md.
 */
import type { TSchema } from "@sinclair/typebox";
import { errorMessage, schemaErrors, Type } from "../schema.js";
import { NEAR_ACTIONS, NEAR_KEYS, nearest } from "./near-miss.js";

export const EDIT_ACTIONS = [
  "edit",
  "replace",
  "insert",
  "delete",
  "read",
  "move",
  "clear_outputs",
  "tags",
] as const;
export const RUN_ACTIONS = ["run"] as const;
export type NotebookAction = (typeof EDIT_ACTIONS)[number] | (typeof RUN_ACTIONS)[number];

export interface NotebookParams {
  action: NotebookAction;
  notebook_path: string;
  cell_index?: number;
  cell_id?: string;
  content?: string;
  old?: string;
  new?: string;
  cell_type?: "code" | "markdown" | "raw";
  tags?: string[];
  add?: string[];
  remove?: string[];
  to_index?: number;
  offset?: number;
  limit?: number;
  execute?: boolean;
  allow_errors?: boolean;
  cell_range?: [number, number];
  all?: boolean;
  timeout?: number;
  wait?: number;
  kernel?: string;
}

/** Parameters that only mean something when cells can run (`all` also goes with replace). */
const RUN_PARAMS = ["execute", "cell_range", "allow_errors", "timeout", "wait"] as const;

export function notebookSchema(withRun: boolean): TSchema {
  const actions = withRun ? [...EDIT_ACTIONS, ...RUN_ACTIONS] : [...EDIT_ACTIONS];
  return Type.Object(
    {
      action: Type.Union(
        actions.map((a) => Type.Literal(a)),
        {
          description:
            "read: list cells (index, id, type, source, output summaries), or one cell with its outputs whole; " +
            "edit: replace a cell's source; replace: change the exact text old to new within one cell (it must match once, or pass all: true); insert: add a cell at cell_index (0..cell count; into a missing .ipynb path at 0: create the notebook); " +
            "delete: remove a cell; move: move a cell to to_index; " +
            "clear_outputs: clear one cell's outputs, or all cells' when no cell is given; " +
            "tags: add and/or remove one cell's metadata tags (e.g. skip-execution, raises-exception)" +
            (withRun
              ? "; run: run one cell (cell_index or cell_id), a range (cell_range, or cell_index..to_index), or all cells, in the notebook's own kernel, saving outputs into the file"
              : ""),
        },
      ),
      notebook_path: Type.String({
        minLength: 1,
        description: "Path of the .ipynb file, relative to the working directory (absolute and ~ allowed)",
      }),
      cell_index: Type.Optional(Type.Integer({ minimum: 0, description: "0-based cell index" })),
      cell_id: Type.Optional(
        Type.String({
          minLength: 1,
          description: "Cell id (nbformat >= 4.5; read lists them), instead of cell_index; give one of them",
        }),
      ),
      content: Type.Optional(Type.String({ description: "New cell source; required for edit and insert" })),
      old: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            "replace: the exact text to change in the cell's source (whitespace and indentation included)",
        }),
      ),
      new: Type.Optional(
        Type.String({ description: "replace: the text that takes old's place (may be empty)" }),
      ),
      all: Type.Optional(
        Type.Boolean({
          description: withRun
            ? "run: every cell, top to bottom (also the default when no cell is given); replace: change every occurrence of old, not just a unique one"
            : "replace: change every occurrence of old, not just a unique one",
        }),
      ),
      cell_type: Type.Optional(
        Type.Union([Type.Literal("code"), Type.Literal("markdown"), Type.Literal("raw")], {
          description:
            "Type of an inserted cell (default code); on edit, changes the cell's type (default: keep it; away from code drops outputs)",
        }),
      ),
      tags: Type.Optional(
        Type.Array(Type.String({ minLength: 1 }), {
          description: "edit/insert: the cell's whole tag list (metadata.tags); [] removes every tag",
        }),
      ),
      add: Type.Optional(
        Type.Array(Type.String({ minLength: 1 }), {
          description: "tags: tags to add to the cell (kept in order, after its existing ones)",
        }),
      ),
      remove: Type.Optional(
        Type.Array(Type.String({ minLength: 1 }), { description: "tags: tags to remove from the cell" }),
      ),
      to_index: Type.Optional(
        Type.Integer({
          minimum: 0,
          description: withRun
            ? "move: the cell's new index; run: the last cell of the range starting at cell_index"
            : "move: the cell's new index",
        }),
      ),
      offset: Type.Optional(
        Type.Integer({ minimum: 0, description: "read: first cell to show (default 0)" }),
      ),
      limit: Type.Optional(Type.Integer({ minimum: 1, description: "read: how many cells to show at most" })),
      kernel: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            "insert that creates a notebook: the kernelspec it is for (e.g. python3, ir); default: the kernel nbagent runs",
        }),
      ),
      ...(withRun
        ? {
            execute: Type.Optional(
              Type.Boolean({ description: "edit/insert/replace: run the cell right after saving it" }),
            ),
            cell_range: Type.Optional(
              Type.Tuple([Type.Integer({ minimum: 0 }), Type.Integer({ minimum: 0 })], {
                description: "run: [first, last] cell indices, inclusive (instead of cell_index/to_index)",
              }),
            ),
            allow_errors: Type.Optional(
              Type.Boolean({
                description: "run: go on after a cell fails (default: stop at the first error)",
              }),
            ),
            timeout: Type.Optional(
              Type.Number({
                exclusiveMinimum: 0,
                description:
                  "run/execute: seconds for the whole call. Default: no limit where a run still going after its wait goes on in the background (MCP, pi, nbagent batch); 60 in a one-shot nbagent call",
              }),
            ),
            wait: Type.Optional(
              Type.Number({
                exclusiveMinimum: 0,
                description:
                  "run/execute: seconds to wait for the result (default 50); a run still going then returns its output so far with a run id and goes on (saving each cell), and the runs tool waits for more or interrupts it. A one-shot nbagent call has no background: it waits for the end and ignores this",
              }),
            ),
          }
        : {}),
    },
    { additionalProperties: false },
  );
}

/** Every parameter's schema, run parameters included: types are checked whatever the tool offers. */
const FULL_SCHEMA = notebookSchema(true);
const ALL_NAMES = Object.keys((FULL_SCHEMA as unknown as { properties: object }).properties);

/** A value as the message shows it (NaN and the like included, long values cut). */
function shown(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const FIELD_RULES: Record<string, string> = {
  cell_index: "must be an integer",
  to_index: "must be an integer",
  offset: "must be an integer",
  limit: "must be an integer of at least 1",
  cell_id: "must be a non-empty string",
  content: "must be a string (the cell's source)",
  old: "must be a non-empty string (the exact text to change)",
  new: "must be a string (the text that takes old's place)",
  cell_type: 'must be "code", "markdown" or "raw"',
  tags: "must be an array of non-empty strings (the cell's whole tag list)",
  add: "must be an array of non-empty strings (tags to add)",
  remove: "must be an array of non-empty strings (tags to remove)",
  execute: "must be true or false",
  all: "must be true or false",
  allow_errors: "must be true or false",
  cell_range: "must be [first, last] (two integer cell indices)",
  timeout: "must be a number of seconds greater than 0",
  wait: "must be a number of seconds greater than 0",
  kernel: "must be a non-empty string (a kernelspec name, e.g. python3)",
};

/** Which actions each optional parameter goes with. */
const APPLIES: Record<string, readonly string[]> = {
  content: ["edit", "insert"],
  old: ["replace"],
  new: ["replace"],
  cell_type: ["edit", "insert"],
  tags: ["edit", "insert"],
  add: ["tags"],
  remove: ["tags"],
  to_index: ["move", "run"],
  offset: ["read"],
  limit: ["read"],
  execute: ["edit", "insert", "replace"],
  cell_range: ["run"],
  all: ["run", "replace"],
  allow_errors: ["run"],
  timeout: ["run"],
  wait: ["run"],
  kernel: ["insert"],
};

export interface ValidateOptions {
  /** Whether cells can run (an executor is configured): run and its parameters are offered. */
  withRun: boolean;
  /** The text for a run request when they cannot. */
  noRunMessage: string;
}

/** The params, checked, or the message (without Error:) of the first problem. */
export function validateNotebookParams(
  raw: unknown,
  options: ValidateOptions,
): { params: NotebookParams; error?: undefined } | { error: string; params?: undefined } {
  const actions: string[] = options.withRun ? [...EDIT_ACTIONS, ...RUN_ACTIONS] : [...EDIT_ACTIONS];
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return { error: `the notebook tool takes an object of parameters, got ${shown(raw)}` };
  }
  // Keys with undefined values are absent (JSON has no undefined).
  const p: Record<string, unknown> = Object.fromEntries(
    Object.entries(raw).filter(([, v]) => v !== undefined),
  );
  const offered = options.withRun
    ? ALL_NAMES
    : ALL_NAMES.filter((n) => !(RUN_PARAMS as readonly string[]).includes(n));

  const unknown = Object.keys(p).filter((k) => !ALL_NAMES.includes(k));
  if (unknown.length > 0) {
    const named = unknown.map((k) => {
      const near = nearest(k, offered, NEAR_KEYS);
      return near ? `${JSON.stringify(k)} (did you mean ${near}?)` : JSON.stringify(k);
    });
    return {
      error: `Unknown parameter${unknown.length === 1 ? "" : "s"} ${named.join(", ")}. The notebook tool takes: ${offered.join(", ")}.`,
    };
  }

  const action = p.action;
  const list = `Use one of: ${actions.join(", ")}.`;
  if (action === undefined) return { error: `action is required. ${list}` };
  if (typeof action !== "string" || !(actions.includes(action) || action === "run")) {
    const near = typeof action === "string" ? nearest(action, actions, NEAR_ACTIONS) : undefined;
    return {
      error: `Unknown action ${shown(action)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ""}. ${list}`,
    };
  }
  if (typeof p.notebook_path !== "string" || p.notebook_path === "") {
    return {
      error: `notebook_path is required (the .ipynb file to work on)${p.notebook_path === undefined ? "" : `; got ${shown(p.notebook_path)}`}.`,
    };
  }
  if (!options.withRun) {
    if (action === "run" || p.execute === true) return { error: options.noRunMessage };
    const runOnly = RUN_PARAMS.find((k) => p[k] !== undefined);
    if (runOnly) return { error: `${runOnly} goes with running cells. ${options.noRunMessage}` };
  }

  // Types and ranges, by the schema. Negative indices pass here: they get the notebook's range in the message.
  for (const e of schemaErrors(FULL_SCHEMA, p)) {
    const field = e.path.split("/")[1] ?? "";
    const value = p[field];
    const isIndex = field === "cell_index" || field === "to_index" || field === "offset";
    if (isIndex && typeof value === "number" && Number.isInteger(value)) continue;
    const rule = FIELD_RULES[field];
    if (rule) return { error: `${field} ${rule}, got ${shown(value)}` };
    return { error: `invalid parameter ${e.path || "(root)"}: ${errorMessage(e)}` };
  }

  const params = p as unknown as NotebookParams;
  const problem = crossFieldProblem(params);
  return problem ? { error: problem } : { params };
}

/** The rules between fields (which go with which action, what each action needs). */
function crossFieldProblem(p: NotebookParams): string | undefined {
  const { action } = p;
  for (const [key, goesWith] of Object.entries(APPLIES)) {
    const value = (p as unknown as Record<string, unknown>)[key];
    // `false` asks for nothing, so it is accepted anywhere.
    if (value === undefined || value === false) continue;
    const withExecute = key === "timeout" || key === "allow_errors" || key === "wait";
    if (withExecute && p.execute === true) continue;
    if (!goesWith.includes(action)) {
      const where = withExecute
        ? "run (or edit/insert/replace with execute: true)"
        : goesWith.length > 1
          ? `${goesWith.slice(0, -1).join(", ")} and ${goesWith[goesWith.length - 1]}`
          : goesWith[0];
      return `${key} goes with ${where}, not ${action}.`;
    }
  }
  if (p.cell_index !== undefined && p.cell_id !== undefined)
    return "Give either cell_index or cell_id, not both.";
  if (action === "edit" || action === "insert") {
    if (p.content === undefined) return `Content is required for ${action} action`;
  }
  for (const key of ["tags", "add", "remove"] as const) {
    const list = p[key];
    const twice = list?.find((t, i) => list.indexOf(t) !== i);
    if (twice !== undefined) return `${key} lists ${JSON.stringify(twice)} twice; give each tag once.`;
  }
  if (action === "tags") {
    if (p.add === undefined && p.remove === undefined) {
      return 'tags needs add and/or remove (arrays of tag names), e.g. add: ["skip-execution"].';
    }
    const both = p.add?.find((t) => p.remove?.includes(t));
    if (both !== undefined) return `${JSON.stringify(both)} is in both add and remove; give it in one.`;
  }
  if (action === "replace") {
    if (p.old === undefined) return "replace needs old (the exact text to change) and new (its replacement).";
    if (p.new === undefined) return 'replace needs new (the text that takes old\'s place; "" removes it).';
  }
  if (action === "run") {
    if (p.cell_range && p.cell_range[0] > p.cell_range[1]) {
      return `cell_range [${p.cell_range[0]}, ${p.cell_range[1]}] is reversed; give [first, last] with first <= last.`;
    }
    const ways = [p.cell_index ?? p.cell_id, p.to_index, p.all === true ? true : undefined, p.cell_range];
    if (p.cell_range !== undefined || p.all === true) {
      if (ways.filter((v) => v !== undefined).length > 1) {
        return "Select the cells to run one way: cell_index or cell_id (optionally with to_index), cell_range, or all.";
      }
    }
  }
  const needsCell =
    action === "edit" ||
    action === "replace" ||
    action === "insert" ||
    action === "delete" ||
    action === "move" ||
    action === "tags";
  if (needsCell && p.cell_index === undefined && p.cell_id === undefined) {
    return `${action} needs cell_index or cell_id (exactly one).`;
  }
  if (action === "move" && p.to_index === undefined) return "move needs to_index (the cell's new index).";
  if (action === "read" && (p.cell_index !== undefined || p.cell_id !== undefined)) {
    if (p.offset !== undefined || p.limit !== undefined) {
      return "read takes cell_index or cell_id (one cell, outputs whole) or offset/limit (a page of cells), not both.";
    }
  }
  return undefined;
}
