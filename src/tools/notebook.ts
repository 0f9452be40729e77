/**
 * The `notebook` tool: edits .ipynb files cell by cell (SPEC S1–S10, X2, X3). No kernel here; the
 * `run` action and `execute: true` are delegated to an optional NotebookExecutor (runtime layer).
 */
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import {
  type CellType,
  cellSource,
  clearCellOutputs,
  createCell,
  findCellById,
  type LoadedNotebook,
  loadNotebook,
  moveCell,
  NotebookFileError,
  saveNotebook,
  setCellSource,
  setCellType,
  supportsCellIds,
  thawCell,
} from "../notebook/index.js";
import {
  EDIT_ACTIONS,
  indexProblem,
  type NotebookAction,
  type NotebookParams,
  notebookSchema,
} from "./notebook-params.js";
import { type ReadCell, renderRead } from "./notebook-read.js";
import { errorResult, type Tool, type ToolResult, type ToolUpdate } from "./types.js";

export type { NotebookParams } from "./notebook-params.js";

export interface NotebookDetails {
  action: string;
  notebookPath?: string;
  cellIndex?: number;
  cellId?: string;
  cellType?: string;
  totalCells?: number;
  /** The cell's source after the change (for delete: the removed source). */
  cellSource?: string;
  toIndex?: number;
  clearedCells?: number;
  cells?: ReadCell[];
  nextOffset?: number;
  warnings?: string[];
  error?: string;
  /** With `execute: true`: the executor's details for the run that followed the edit. */
  run?: unknown;
}

/** What the runtime layer implements to run cells of a saved notebook in its kernel (X1). */
export interface NotebookRunRequest {
  /** Real absolute path of the notebook (already saved when called after an edit). */
  path: string;
  /** The path as the user gave it, for messages. */
  shownPath: string;
  /** Indices of the cells to run, in order. */
  cellIndices: number[];
  params: NotebookParams;
  signal?: AbortSignal;
  onUpdate?: ToolUpdate<unknown>;
}

export interface NotebookExecutor {
  run(request: NotebookRunRequest): Promise<ToolResult<unknown>>;
}

export interface NotebookToolOptions {
  /** The session's working directory: relative notebook paths resolve against it (S2). */
  cwd: string;
  /** Runs cells; without it `run` and `execute: true` answer with an Error. */
  executor?: NotebookExecutor;
  /** Character budget of a `read` result (default 40,000). */
  readBudget?: number;
}

const NO_EXECUTOR =
  "Running cells is not available in this notebook tool (no kernel runtime is configured). Edit the notebook, then run code with the python tool.";

function resolvePath(cwd: string, p: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return resolve(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(cwd, p);
}

function ok(text: string, details: NotebookDetails): ToolResult<NotebookDetails> {
  return { content: [{ type: "text", text }], details };
}

class ToolError extends Error {}

export function createNotebookTool(options: NotebookToolOptions): Tool<NotebookParams, NotebookDetails> {
  const { cwd, executor } = options;
  const readBudget = options.readBudget ?? 40_000;
  const actions: readonly string[] = [...EDIT_ACTIONS, "run"]; // run without executor → NO_EXECUTOR error

  return {
    name: "notebook",
    label: "Notebook",
    description:
      "Edit a Jupyter notebook (.ipynb) cell by cell: read cells, edit/insert/delete/move cells, clear outputs. " +
      "Cells are addressed by 0-based cell_index or by cell_id. The file keeps nbformat's exact formatting; " +
      "writes are atomic and refuse if the file changed on disk meanwhile." +
      (executor
        ? " Use action run (or execute: true on edit/insert) to run cells in the notebook's kernel."
        : ""),
    parameters: notebookSchema(Boolean(executor)),

    async execute(_toolCallId, params, signal, onUpdate) {
      const p = (params ?? {}) as Partial<NotebookParams> & Record<string, unknown>;
      const action = p.action as NotebookAction;
      const details: NotebookDetails = { action: typeof p.action === "string" ? p.action : String(p.action) };
      const fail = (message: string) => errorResult<NotebookDetails>(message, { ...details, error: message });

      if (typeof p.action !== "string" || !actions.includes(p.action)) {
        return fail(
          `Unknown action ${JSON.stringify(p.action) ?? "(none)"}. Use one of: ${[...EDIT_ACTIONS].join(", ")}.`,
        );
      }
      if (typeof p.notebook_path !== "string" || p.notebook_path === "") {
        return fail("notebook_path is required (the .ipynb file to work on).");
      }
      const shownPath = p.notebook_path;
      details.notebookPath = shownPath;
      if ((action === "run" || p.execute === true) && !executor) return fail(NO_EXECUTOR);
      if ((action === "edit" || action === "insert") && typeof p.content !== "string") {
        return fail(`Content is required for ${action} action`);
      }
      if (p.cell_type !== undefined && p.cell_type !== "code" && p.cell_type !== "markdown") {
        return fail(`cell_type must be "code" or "markdown", got ${JSON.stringify(p.cell_type)}`);
      }
      if (p.cell_index !== undefined && p.cell_id !== undefined) {
        return fail("Give either cell_index or cell_id, not both.");
      }
      for (const name of ["cell_index", "to_index", "offset", "limit"] as const) {
        const problem = p[name] === undefined ? undefined : indexProblem(name, p[name]);
        if (problem) return fail(problem);
      }
      if (p.cell_id !== undefined && (typeof p.cell_id !== "string" || p.cell_id === "")) {
        return fail(`cell_id must be a non-empty string, got ${JSON.stringify(p.cell_id)}`);
      }
      if (p.cell_range !== undefined || p.all !== undefined) {
        if (action !== "run") return fail(`cell_range and all go with action run, not ${action}.`);
        if (p.all !== undefined && typeof p.all !== "boolean")
          return fail(`all must be true or false, got ${JSON.stringify(p.all)}`);
        const r = p.cell_range as unknown;
        if (r !== undefined) {
          if (!Array.isArray(r) || r.length !== 2 || r.some((v) => indexProblem("cell_range", v))) {
            return fail(
              `cell_range must be [first, last] (two integer cell indices), got ${JSON.stringify(r)}`,
            );
          }
          if (r[0] > r[1])
            return fail(`cell_range [${r[0]}, ${r[1]}] is reversed; give [first, last] with first <= last.`);
        }
        const others = [p.cell_index, p.cell_id, p.to_index, p.all === true ? true : undefined, r].filter(
          (v) => v !== undefined,
        );
        if (others.length > 1) {
          return fail(
            "Select the cells to run one way: cell_index or cell_id (optionally with to_index), cell_range, or all.",
          );
        }
      }
      const needsCell = action === "edit" || action === "insert" || action === "delete" || action === "move";
      if (needsCell && p.cell_index === undefined && p.cell_id === undefined) {
        return fail(`${action} needs cell_index or cell_id (exactly one).`);
      }
      if (action === "move" && p.to_index === undefined)
        return fail("move needs to_index (the cell's new index).");

      let loaded: LoadedNotebook;
      try {
        loaded = await loadNotebook(resolvePath(cwd, shownPath), shownPath);
      } catch (e) {
        if (e instanceof NotebookFileError) {
          const r = fail(e.message);
          if (e.reason) r.details.error = `${e.message} (${e.reason})`;
          return r;
        }
        throw e;
      }
      const nb = loaded.notebook;
      const cells = nb.cells;
      const count = cells.length;

      try {
        // Which cell: by id or by index, with S3's ranges (insert 0..count, others 0..count-1).
        let index: number | undefined;
        if (p.cell_id !== undefined) {
          index = findCellById(nb, p.cell_id);
          if (index < 0) {
            const hint = supportsCellIds(nb)
              ? "Use action read to list cell ids."
              : "This notebook is older than nbformat 4.5 and has no cell ids; use cell_index.";
            throw new ToolError(`No cell with id ${JSON.stringify(p.cell_id)} in ${shownPath}. ${hint}`);
          }
        } else if (p.cell_index !== undefined) {
          index = p.cell_index;
          if (action === "insert" && (index < 0 || index > count)) {
            throw new ToolError(`Cell index ${index} out of range for insert (0-${count}) in ${shownPath}`);
          }
          if (action !== "insert" && (index < 0 || index > count - 1)) {
            throw new ToolError(`Cell index ${index} out of range (0-${count - 1}) in ${shownPath}`);
          }
        }
        details.cellIndex = index;

        const save = async () => {
          try {
            await saveNotebook(loaded, shownPath);
          } catch (e) {
            if (e instanceof NotebookFileError) throw new ToolError(e.message);
            throw e;
          }
        };
        const summary = (verb: string) => `${verb}. Notebook now has ${cells.length} cells.`;
        const withRun = async (result: ToolResult<NotebookDetails>, at: number) => {
          if (p.execute !== true || !executor) return result;
          const run = await executor.run({
            path: loaded.path,
            shownPath,
            cellIndices: [at],
            params: p as NotebookParams,
            signal,
            onUpdate: onUpdate as ToolUpdate<unknown> | undefined,
          });
          return {
            ...run,
            content: [...result.content, ...run.content],
            details: { ...result.details, run: run.details },
          };
        };

        // edit / insert: the summary and details of the written cell, then its run when execute: true.
        const written = (verb: string, cell: { id?: unknown; cell_type: string }) =>
          withRun(
            ok(summary(verb), {
              ...details,
              cellId: cell.id as string | undefined,
              cellType: cell.cell_type,
              totalCells: cells.length,
              cellSource: p.content,
            }),
            index!,
          );

        switch (action) {
          case "edit": {
            const cell = thawCell(nb, index!);
            const dropped = p.cell_type ? setCellType(cell, p.cell_type as CellType) : [];
            setCellSource(cell, p.content!);
            await save();
            const type = cell.cell_type;
            const note = dropped.length ? ` (dropped ${dropped.join(" and ")})` : "";
            return written(`Replaced cell ${index} (${type})${note}`, cell);
          }
          case "insert": {
            const type = (p.cell_type ?? "code") as CellType;
            const cell = createCell(nb, type, p.content!);
            cells.splice(index!, 0, cell);
            await save();
            return written(`Inserted ${type} cell at position ${index}`, cell);
          }
          case "delete": {
            const [cell] = cells.splice(index!, 1);
            await save();
            return ok(summary(`Deleted cell ${index} (${cell.cell_type})`), {
              ...details,
              cellId: cell.id as string | undefined,
              cellType: cell.cell_type,
              totalCells: cells.length,
              cellSource: cellSource(cell),
            });
          }
          case "move": {
            const to = p.to_index!;
            if (to < 0 || to > count - 1)
              throw new ToolError(`Target index ${to} out of range (0-${count - 1}) in ${shownPath}`);
            const cell = cells[index!];
            moveCell(nb, index!, to);
            if (to !== index) await save();
            return ok(summary(`Moved cell ${index} (${cell.cell_type}) to position ${to}`), {
              ...details,
              cellId: cell.id as string | undefined,
              cellType: cell.cell_type,
              toIndex: to,
              totalCells: cells.length,
              cellSource: cellSource(cell),
            });
          }
          case "clear_outputs": {
            const targets = index === undefined ? cells.map((_, i) => i) : [index];
            const hasOutputs = (i: number) => {
              const c = cells[i];
              return (
                c.cell_type === "code" &&
                ((Array.isArray(c.outputs) && c.outputs.length > 0) || c.execution_count != null)
              );
            };
            const cleared = targets.filter((i) => hasOutputs(i) && clearCellOutputs(thawCell(nb, i))).length;
            if (cleared > 0) await save();
            const what = index === undefined ? "all cells" : `cell ${index} (${cells[index].cell_type})`;
            return ok(
              summary(`Cleared outputs of ${what}: ${cleared} cell${cleared === 1 ? "" : "s"} changed`),
              {
                ...details,
                cellType: index === undefined ? undefined : cells[index].cell_type,
                totalCells: cells.length,
                clearedCells: cleared,
              },
            );
          }
          case "read": {
            const single = index !== undefined;
            const offset = single ? index! : (p.offset ?? 0);
            if (offset < 0 || (offset > count - 1 && !(offset === 0 && count === 0))) {
              throw new ToolError(`Offset ${offset} out of range (0-${count - 1}) in ${shownPath}`);
            }
            const end = single ? offset + 1 : Math.min(count, offset + (p.limit ?? count));
            const view = renderRead(
              nb,
              shownPath,
              offset,
              end,
              single ? readBudget * 4 : readBudget,
              loaded.warnings,
            );
            return ok(view.text, {
              ...details,
              totalCells: count,
              cells: view.cells,
              nextOffset: view.nextOffset,
              warnings: loaded.warnings.length ? loaded.warnings : undefined,
              ...(single ? { cellType: cells[index!].cell_type, cellSource: view.cells[0]?.source } : {}),
            });
          }
          case "run": {
            let start = index ?? 0;
            let stop = index === undefined ? count - 1 : index;
            if (p.cell_range) {
              [start, stop] = p.cell_range;
              if (start > count - 1 || stop > count - 1) {
                throw new ToolError(
                  `cell_range [${start}, ${stop}] out of range (0-${count - 1}) in ${shownPath}`,
                );
              }
            }
            if (p.to_index !== undefined) {
              if (p.to_index < start || p.to_index > count - 1) {
                throw new ToolError(
                  `to_index ${p.to_index} out of range (${start}-${count - 1}) in ${shownPath}`,
                );
              }
              stop = p.to_index;
            }
            const cellIndices: number[] = [];
            for (let i = start; i <= stop; i++) cellIndices.push(i);
            return executor!.run({
              path: loaded.path,
              shownPath,
              cellIndices,
              params: p as NotebookParams,
              signal,
              onUpdate: onUpdate as ToolUpdate<unknown> | undefined,
            }) as Promise<ToolResult<NotebookDetails>>;
          }
        }
      } catch (e) {
        if (e instanceof ToolError) return fail(e.message);
        throw e;
      }
      return fail(`Unknown action ${JSON.stringify(action)}.`);
    },
  };
}
