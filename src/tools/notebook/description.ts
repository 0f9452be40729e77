import { CALL_OUTPUT_BYTES, DEFAULT_IMAGE_BUDGET } from "../../output/model-budgets.js";
import { inUnit } from "../../sys/units.js";
import { type KeptKernelLimits, minutes } from "../kernel-text.js";

/**
 * The notebook tool's description: a prompt the model can act on (docs/notebook-tool.md). It says
 * how cells are addressed, how a notebook is created, and — when cells can run — how the kernel's
 * state lives and dies. The budgets it names are those the tool keeps (output/model-budgets.ts
 * unless its options set others).
 */
export function notebookDescription(
  withRun: boolean,
  limits: KeptKernelLimits = { idleTimeoutMs: 5 * 60_000, maxSessions: 4 },
  background = false,
  budgets: { outputBytes?: number; images?: number } = {},
): string {
  const outputBytes = budgets.outputBytes ?? CALL_OUTPUT_BYTES;
  const images = budgets.images ?? DEFAULT_IMAGE_BUDGET.maxImages;
  const lines = [
    "Edit a Jupyter notebook (.ipynb) cell by cell" +
      (withRun ? " and run them in the notebook's own kernel." : "."),
    `- Cells are addressed by cell_index (0-based everywhere in this tool) or cell_id. read lists every cell's index, id, type, source and output summaries; with cell_index or cell_id it shows that cell, saved outputs whole as run shows them. read returns saved images (first ${images}), labelled [image K · cell C · W×H]. Results of edit, insert, move and delete name the cell's index and id.`,
    "- Create a notebook: insert at cell_index 0 into a path ending in .ipynb that does not exist (its folder must exist). It becomes nbformat 4.5 (cell ids), for the kernel named by kernel (a kernelspec, e.g. ir; default python3).",
    "- insert puts the new cell at cell_index (the cell count appends); edit replaces a cell's source (cell_type code/markdown/raw changes its type); replace changes the exact text old to new in one cell (one match, or all: true); move takes to_index; clear_outputs clears one cell or all.",
    "- tags on edit/insert: the cell's whole tag list ([] clears it); action tags takes add/remove. run skips skip-execution cells; raises-exception ones may fail.",
    "- The file keeps its formatting (indentation, line endings); only changed cells' lines change. Writes are atomic.",
    "- Another program or session may change the file between your calls. A call by cell_index (edit, replace, delete, tags, clear_outputs, run, insert, move) whose index no longer names the cell you last saw there (or, for edit/delete, whose cell was edited) is refused with what changed; otherwise it goes ahead and says what changed. cell_id always names the same cell.",
  ];
  if (withRun) {
    lines.push(
      "- run runs one cell (cell_index or cell_id), a range (cell_range [first, last], or cell_index..to_index) or all cells (the default), top to bottom, stopping at the first error unless allow_errors; execute: true on edit/insert runs the saved cell. Outputs and execution counts are saved into the file. " +
        (background
          ? "A run still going after wait seconds (default 50) returns its output so far with a run id and goes on in the background, saving each cell, with no time limit unless you pass timeout (seconds for the whole call); the runs tool waits for it or interrupts it."
          : "timeout: seconds for the whole call (default 60)."),
      `- Each notebook has its own kernel (cwd: the notebook's folder). State (variables, imports) is kept between calls while the host runs, but a kernel idle for ${minutes(limits.idleTimeoutMs)} is replaced, and so is the least recently used one when a new kernel session is needed beyond the ${limits.maxSessions} kept (at most ${limits.maxSessions}: python sessions and notebook kernels together); the next run's result says so. Cells are never re-run automatically: after a replacement, re-run those whose state you need.`,
      "- The python tool with notebook_path runs code in this notebook's kernel (to inspect variables, try a fix) without changing the file.",
      `- Results show each cell's output within ${inUnit(outputBytes, "KB", 0, "")} per call (a head and tail of long output, tracebacks always); the whole is saved as artifact://<id> (artifact tool). Notebook kernels behave as in Jupyter: no agent helpers, input() gets '' once then EOFError, and host env variables that look like secrets (API keys, tokens, passwords, URLs with credentials) are left out (a kernel's first run names them).`,
    );
  } else {
    lines.push("- Running cells is not available in this setup (no kernel runtime).");
  }
  return lines.join("\n");
}
