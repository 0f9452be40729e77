/**
 * Parameters of the `notebook` tool: the TypeBox schema the model sees and the checks execute()
 * applies itself (integrations may hand over unvalidated JSON).
 */
import { type TSchema, Type } from "@sinclair/typebox";

export const EDIT_ACTIONS = ["edit", "insert", "delete", "read", "move", "clear_outputs"] as const;
export const RUN_ACTIONS = ["run"] as const;
export type NotebookAction = (typeof EDIT_ACTIONS)[number] | (typeof RUN_ACTIONS)[number];

export interface NotebookParams {
  action: NotebookAction;
  notebook_path: string;
  cell_index?: number;
  cell_id?: string;
  content?: string;
  cell_type?: "code" | "markdown";
  to_index?: number;
  offset?: number;
  limit?: number;
  execute?: boolean;
  allow_errors?: boolean;
  cell_range?: [number, number];
  all?: boolean;
  timeout?: number;
}

export function notebookSchema(withRun: boolean): TSchema {
  const actions = withRun ? [...EDIT_ACTIONS, ...RUN_ACTIONS] : [...EDIT_ACTIONS];
  return Type.Object({
    action: Type.Union(
      actions.map((a) => Type.Literal(a)),
      {
        description:
          "edit: replace a cell's source; insert: add a cell at cell_index (0..cell count); delete: remove a cell; " +
          "read: list cells with sources and output summaries; move: move a cell to to_index; " +
          "clear_outputs: clear one cell's outputs, or all cells' when no cell is given" +
          (withRun
            ? "; run: run one cell (cell_index or cell_id), a range (cell_range, or cell_index..to_index), or all cells, in the notebook's own kernel, saving outputs into the file"
            : ""),
      },
    ),
    notebook_path: Type.String({
      description: "Path of the .ipynb file, relative to the working directory (absolute and ~ allowed)",
    }),
    cell_index: Type.Optional(Type.Integer({ minimum: 0, description: "0-based cell index" })),
    cell_id: Type.Optional(
      Type.String({
        description: "Cell id (nbformat >= 4.5), instead of cell_index; give exactly one of them",
      }),
    ),
    content: Type.Optional(Type.String({ description: "New cell source; required for edit and insert" })),
    cell_type: Type.Optional(
      Type.Union([Type.Literal("code"), Type.Literal("markdown")], {
        description:
          "Type of an inserted cell (default code); on edit, changes the cell's type (default: keep it)",
      }),
    ),
    to_index: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: withRun
          ? "move: the cell's new index; run: the last cell of the range starting at cell_index"
          : "move: the cell's new index",
      }),
    ),
    offset: Type.Optional(Type.Integer({ minimum: 0, description: "read: first cell to show (default 0)" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: "read: how many cells to show at most" })),
    ...(withRun
      ? {
          execute: Type.Optional(Type.Boolean({ description: "edit/insert: run the cell afterwards" })),
          cell_range: Type.Optional(
            Type.Tuple([Type.Integer({ minimum: 0 }), Type.Integer({ minimum: 0 })], {
              description: "run: [first, last] cell indices, inclusive (instead of cell_index/to_index)",
            }),
          ),
          all: Type.Optional(
            Type.Boolean({
              description: "run: every cell, top to bottom (also the default when no cell is given)",
            }),
          ),
          allow_errors: Type.Optional(
            Type.Boolean({ description: "run: go on after a cell fails (default: stop at the first error)" }),
          ),
          timeout: Type.Optional(
            Type.Number({
              exclusiveMinimum: 0,
              description: "run/execute: seconds for the whole call (default 60)",
            }),
          ),
        }
      : {}),
  });
}

/** Error text for a value that is not a usable index, or undefined when it is an integer. */
export function indexProblem(name: string, value: unknown): string | undefined {
  if (typeof value === "number" && Number.isInteger(value)) return undefined;
  return `${name} must be an integer, got ${JSON.stringify(value) ?? String(value)}`;
}
