/**
 * insert into a path where no file is: creates the notebook (docs/notebook-tool.md). Only at
 * cell_index 0, only for a path ending in .ipynb, only inside an existing folder; the new file is
 * an nbformat 4.5 notebook with the kernelspec and language_info of the kernel it will run in.
 */
import {
  type CellType,
  cellTags,
  changeCellTags,
  createCell,
  createNotebookFile,
  DEFAULT_KERNELSPEC,
  NotebookFileError,
  type NotebookKernelSpec,
  newNotebook,
} from "../../../notebook/index.js";
import { pluralBare } from "../../../sys/units.js";
import { describeFailure } from "../../failure-text.js";
import { fileErrorText } from "../../sandbox-paths.js";
import { errorResult, type ToolResult } from "../../types.js";
import type { NotebookDetails } from "../types.js";
import { type ActionContext, ok, thenRun } from "./context.js";

export interface CreateOptions extends Omit<ActionContext, "loaded"> {
  /** Absolute path of the file to create. */
  path: string;
  /** Under --sandbox: the folders the file must be made in (notebook.ts). */
  roots?: readonly string[];
  /**
   * The kernelspec a new notebook is for: the one named, or without a name the kernel nbagent runs;
   * throws (a KernelStartError naming those installed) for a name no kernelspec has.
   */
  newNotebookKernel?: (name?: string) => Promise<NotebookKernelSpec>;
  /** Where the path leads, added to the refusals about the path (sandbox-paths.ts pathWhere). */
  where?: string;
  /** Told the notebook as created (what the model's result shows). */
  created?: (loaded: ActionContext["loaded"]) => void;
}

export async function createWithCell(options: CreateOptions): Promise<ToolResult<NotebookDetails>> {
  const { params: p, shownPath, details } = options;
  const refuse = (message: string) => errorResult<NotebookDetails>(message, { ...details, error: message });
  // Refusals about the path say where it leads; the kernel's do not.
  const fail = (text: string) => refuse(options.where ? `${text} ${options.where}` : text);
  if (p.cell_index !== 0) {
    const by =
      p.cell_id !== undefined ? `cell_id ${JSON.stringify(p.cell_id)}` : `cell_index ${p.cell_index}`;
    return fail(`Notebook not found: ${shownPath}. To create it, insert at cell_index 0 (not ${by}).`);
  }
  if (!/\.ipynb$/i.test(shownPath)) {
    return fail(`Notebook not found: ${shownPath}. Only a path ending in .ipynb is created by insert.`);
  }
  let kernel = DEFAULT_KERNELSPEC;
  if (p.kernel !== undefined) {
    if (!options.newNotebookKernel)
      return refuse(
        `Cannot create ${shownPath} for kernel ${JSON.stringify(p.kernel)}: this notebook tool has no kernels to look the name up in. Nothing was created; leave kernel out (the notebook is for ${DEFAULT_KERNELSPEC.name}).`,
      );
    try {
      kernel = await options.newNotebookKernel(p.kernel);
    } catch (err) {
      return refuse(
        `Cannot create ${shownPath}: ${describeFailure(err).replace(/\.?$/, ".")} Nothing was created.`,
      );
    }
  } else if (options.newNotebookKernel) {
    kernel = await options.newNotebookKernel().catch(() => DEFAULT_KERNELSPEC);
  }
  const nb = newNotebook(kernel);
  const first = createCell(nb, (p.cell_type ?? "code") as CellType, p.content!);
  if (p.tags?.length) changeCellTags(first, { set: p.tags });
  nb.cells.push(first);
  let loaded: ActionContext["loaded"];
  try {
    loaded = await createNotebookFile(options.path, nb, shownPath, { roots: options.roots });
  } catch (e) {
    if (e instanceof NotebookFileError) return fail(fileErrorText(e, shownPath));
    throw e;
  }
  options.created?.(loaded);
  const cell = loaded.notebook.cells[0];
  const text =
    `Created ${shownPath} (nbformat 4.5, kernel ${kernel.name}: ${kernel.display_name}). ` +
    `Inserted ${cell.cell_type} cell at position 0 (id ${cell.id}).` +
    (cellTags(cell).length ? ` Tags: ${cellTags(cell).join(", ")}.` : "") +
    ` Notebook now has ${pluralBare(1, "cell")}.`;
  const result = ok(text, {
    ...details,
    created: true,
    cellIndex: 0,
    cellId: cell.id as string,
    cellType: cell.cell_type,
    totalCells: 1,
    cellSource: p.content,
  });
  return thenRun({ ...options, loaded }, result, 0);
}
