/**
 * The `notebook` tool: edits .ipynb files cell by cell (docs/notebook-tool.md) and, with an executor,
 * runs their cells. execute() checks the params against the schema, loads the file (or, for an
 * insert into a missing path, creates it), then dispatches to one small handler per action
 * (notebook/actions/). Behaviour rules: docs/notebook-tool.md.
 */
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import {
  type Cell,
  cellsSharingId,
  changedOnDisk,
  fileTurnKey,
  inFileTurn,
  type LoadedNotebook,
  loadNotebook,
  type Notebook,
  type NotebookCheck,
  NotebookFileError,
  type NotebookKernelSpec,
} from "../../notebook/index.js";
import { type ImageBudget, READ_CHARS } from "../../output/model-budgets.js";
import type { EventBus } from "../../runtime/events.js";
import type { ToolDescriptor, ToolFacts } from "../descriptor.js";
import { cellRunRefs } from "../result-refs.js";
import { fileErrorText, PATH_ERRORS, pathWhere, withWhere } from "../sandbox-paths.js";
import { errorResult, type Tool, type ToolResult, type ToolUpdate } from "../types.js";
import { createWithCell, HANDLERS, ToolError, withSaveNotes } from "./actions/index.js";
import { notebookDescription } from "./description.js";
import { type NotebookParams, notebookSchema, validateNotebookParams } from "./params.js";
import { checkLoaded, invalidNote } from "./problems.js";
import { type SeenCells, type Staleness, seenCells, staleness } from "./seen.js";
import type { NotebookDetails, NotebookExecutor } from "./types.js";

export type { NotebookParams } from "./params.js";
export type { NotebookDetails, NotebookExecutor, NotebookRunRequest } from "./types.js";

export interface NotebookToolOptions {
  /** The session's working directory: relative notebook paths resolve against it. */
  cwd: string;
  /** Runs cells; without it `run` and `execute: true` answer with an Error. */
  executor?: NotebookExecutor;
  /** Character budget of a `read` result (default READ_CHARS: 40,000). */
  readBudget?: number;
  /** Image budget of a `read` result (default: the python tool's, DEFAULT_IMAGE_BUDGET). */
  images?: ImageBudget;
  /** The kernel a notebook created by insert is set up for (default python3, "Python 3 (ipykernel)"). */
  newNotebookKernel?: (name?: string) => Promise<NotebookKernelSpec>;
  /**
   * Under --sandbox: the folders notebooks must really be in (sandbox-paths.ts `sandboxRoots`);
   * a path that leads out of them is refused. Undefined: links are followed anywhere.
   */
  roots?: readonly string[];
  /**
   * Where the tool tells what it read and wrote (docs/view.md, "Events"): `notebook-opened` for
   * every file it loads, `notebook-saved` for every write of its own (a run's saves say so there).
   */
  events?: EventBus;
}

const NO_EXECUTOR =
  "Running cells is not available in this notebook tool (no kernel runtime is configured). Edit the notebook, then run code with the python tool.";

function resolvePath(cwd: string, p: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return resolve(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(cwd, p);
}

/**
 * What the notebook tool is, for hosts and renderers: everything of its descriptor but `create`
 * (notebook/descriptor.ts adds it, with the executor that runs cells). Kept apart so that a
 * file-only call (`nbagent notebook read`) loads neither the executor nor the runtime.
 */
export const notebookToolInfo = {
  name: "notebook",
  label: "Notebook",
  parameters: notebookSchema(true),
  // MCP annotates a whole tool, not an action: delete and clear_outputs are destructive
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  describe: (facts: ToolFacts) => notebookDescription(true, facts.limits, facts.background),
  refs: cellRunRefs,
} satisfies Omit<ToolDescriptor<NotebookParams, NotebookDetails>, "create">;

export function createNotebookTool(options: NotebookToolOptions): Tool<NotebookParams, NotebookDetails> {
  const { cwd, executor, roots, events } = options;
  const readBudget = options.readBudget ?? READ_CHARS;
  const withRun = Boolean(executor);
  // Per file (real path): the cells as this host's last call on it left them (notebook/seen.ts).
  const seen = new Map<string, SeenCells>();

  return {
    name: notebookToolInfo.name,
    label: notebookToolInfo.label,
    description: notebookDescription(withRun, executor?.limits, executor?.background === true, {
      outputBytes: executor?.maxOutputBytes,
      images: options.images?.maxImages,
    }),
    parameters: notebookSchema(withRun),

    async execute(_toolCallId, raw, signal, onUpdate) {
      const given = raw as unknown as Record<string, unknown> | undefined;
      const details: NotebookDetails = { action: String(given?.action) };
      const fail = (message: string) => errorResult<NotebookDetails>(message, { ...details, error: message });

      const checked = validateNotebookParams(raw, { withRun, noRunMessage: NO_EXECUTOR });
      if (checked.error !== undefined) {
        if (typeof given?.notebook_path === "string") details.notebookPath = given.notebook_path;
        return fail(checked.error);
      }
      const params = checked.params;
      const shownPath = params.notebook_path;
      details.notebookPath = shownPath;
      const path = resolvePath(cwd, shownPath);
      let next: ((r: ToolResult<NotebookDetails>) => Promise<ToolResult<NotebookDetails>>) | undefined;
      const common = {
        afterTurn: (f: NonNullable<typeof next>) => {
          next = f;
        },
        params,
        shownPath,
        details,
        executor,
        readBudget,
        images: options.images,
        signal,
        onUpdate: onUpdate as ToolUpdate<unknown> | undefined,
      };

      type Prepared =
        | { done: ToolResult<NotebookDetails> }
        | { loaded: LoadedNotebook; check: NotebookCheck; asLoaded: SeenCells; stale?: Staleness };
      /** Loads the file and checks the call against it and against what the model last saw of it. */
      const prepare = async (): Promise<Prepared> => {
        let loaded: LoadedNotebook;
        try {
          loaded = await loadNotebook(path, shownPath, { roots });
        } catch (e) {
          if (!(e instanceof NotebookFileError)) throw e;
          if (e.code === "not_found" && params.action === "insert") {
            const done = await createWithCell({
              ...common,
              path,
              roots,
              newNotebookKernel: options.newNotebookKernel,
              created: (made) => {
                seen.set(made.path, seenCells(made.notebook));
                events?.emit({
                  type: "notebook-saved",
                  path: made.path,
                  cellIds: cellIdsOf(made.notebook.cells),
                });
              },
              where: pathWhere(shownPath, path, cwd),
            });
            return { done };
          }
          const text = fileErrorText(e, shownPath);
          return {
            done: fail(PATH_ERRORS.has(e.code) ? withWhere(text, pathWhere(shownPath, path, cwd)) : text),
          };
        }
        if (params.kernel !== undefined) {
          const spec = (loaded.notebook.metadata as { kernelspec?: { name?: unknown } }).kernelspec;
          const has =
            typeof spec?.name === "string"
              ? `its kernelspec is ${JSON.stringify(spec.name)}`
              : "it names no kernelspec";
          return {
            done: fail(
              `kernel chooses the kernel of a notebook that insert creates; ${shownPath} exists (${has}). Nothing was changed; leave kernel out to insert into it.`,
            ),
          };
        }
        events?.emit({ type: "notebook-opened", path: loaded.path });
        const check = await checkLoaded(loaded);
        if (params.cell_id !== undefined) {
          const shared = cellsSharingId(loaded.notebook, params.cell_id);
          if (shared.length > 0) {
            return {
              done: fail(
                `Cell id ${JSON.stringify(params.cell_id)} is shared by cells ${shared.join(", ")} in ${shownPath}, so it does not say which cell; use cell_index (one of ${shared.join(", ")}) instead. Nothing was changed.`,
              ),
            };
          }
        }
        // What the model last saw of the file against the file now: an index that no longer names
        // the cell it saw there is refused (docs/notebook-tool.md, "Indices between calls").
        const asLoaded = seenCells(loaded.notebook);
        const before = seen.get(loaded.path);
        const stale = before && staleness(params, before, asLoaded, shownPath);
        // The refusal says what changed; a run's result names cells as the run found them.
        if (stale?.refusal !== undefined || params.action === "run") seen.set(loaded.path, asLoaded);
        if (stale?.refusal !== undefined) return { done: fail(stale.refusal) };
        return { loaded, check, asLoaded, stale };
      };

      const perform = async (prepared: Prepared) => {
        if ("done" in prepared) return prepared.done;
        const { loaded, check, asLoaded, stale } = prepared;
        const readFingerprint = loaded.fingerprint;
        let result: Awaited<ReturnType<(typeof HANDLERS)[typeof params.action]>>;
        try {
          const ctx = { ...common, loaded, check };
          result = withSaveNotes(ctx, await HANDLERS[params.action](ctx));
        } catch (e) {
          if (e instanceof ToolError) {
            seen.set(loaded.path, asLoaded);
            return fail(e.message);
          }
          throw e;
        }
        // This call's own write (a run's saves are told by the run).
        if (params.action !== "run" && loaded.fingerprint !== readFingerprint && events)
          events.emit({
            type: "notebook-saved",
            path: loaded.path,
            cellIds: changedCellIds(asLoaded, loaded.notebook, params.action, result.details?.cellId),
          });
        // A run's saves go on after this point (in the background too): only outputs change.
        if (params.action !== "run")
          seen.set(loaded.path, result.isError ? asLoaded : seenCells(loaded.notebook));
        if (stale?.note !== undefined) result = withNote(result, stale.note);
        if (loaded.upgradedFrom !== undefined && !result.isError) {
          // Saved by this call (an edit, or a run writing its outputs) or still as it was on disk.
          const saved = (await changedOnDisk({ ...loaded, fingerprint: readFingerprint })) !== undefined;
          const when = saved ? "saved" : params.action === "run" ? "run" : "unchanged";
          result = withNote(result, upgradeNote(shownPath, loaded.upgradedFrom, when), "last");
        }
        if (params.action === "read" || check.problems.length === 0) return result;
        // A save replaces the fingerprint: check again what was written (unchanged cells are cached).
        const saved = loaded.fingerprint !== readFingerprint;
        const after = params.action === "run" ? "ran" : saved ? await checkLoaded(loaded, check) : "unsaved";
        const note = invalidNote(shownPath, check, after);
        if (note && !result.isError) result = withNote(result, note);
        return result;
      };
      // A run holds its notebook for as long as its cells take: it takes a turn only for each save.
      // Every other action waits for the calls before it; a cell it runs (execute: true) runs once
      // the turn has ended, like a run.
      // A run's load takes a turn of its own, so that what it remembers as seen is in turn order.
      if (params.action === "run") return perform(await inFileTurn(fileTurnKey(path), prepare));
      const done = await inFileTurn(fileTurnKey(path), async () => perform(await prepare()));
      return next && !done.isError ? next(done) : done;
    },
  };
}

/** The ids of cells that have one. */
function cellIdsOf(cells: readonly Cell[]): string[] {
  return cells.flatMap((c) => (typeof c.id === "string" && c.id ? [c.id] : []));
}

/**
 * The cells a write changed, for its notebook-saved event: those inserted, deleted, edited or moved
 * (by their ids), and the cell the call named (tags and outputs are not in `before`); every cell for
 * a clear_outputs of the whole notebook.
 */
function changedCellIds(before: SeenCells, nb: Notebook, action: string, named?: string): string[] {
  if (action === "clear_outputs" && named === undefined) return cellIdsOf(nb.cells);
  const after = seenCells(nb);
  const was = new Map(before.flatMap((c) => (c.id ? [[c.id, c.content] as const] : [])));
  const now = new Set(after.flatMap((c) => (c.id ? [c.id] : [])));
  const ids = new Set<string>();
  for (const c of after) if (c.id && was.get(c.id) !== c.content) ids.add(c.id);
  for (const id of was.keys()) if (!now.has(id)) ids.add(id);
  // Moved: where the kept cells' order differs.
  const keptBefore = before.filter((c) => c.id && now.has(c.id));
  const keptAfter = after.filter((c) => c.id && was.has(c.id));
  keptAfter.forEach((c, k) => {
    if (keptBefore[k]?.id !== c.id) ids.add(c.id!);
  });
  if (named) ids.add(named);
  return [...ids];
}

/** The result with a paragraph added to its first (or last) text. */
function withNote<T>(result: ToolResult<T>, note: string, at: "first" | "last" = "first"): ToolResult<T> {
  const content = [...result.content];
  let i = 0;
  if (at === "last") for (let k = 0; k < content.length; k++) if (content[k].type === "text") i = k;
  const part = content[i];
  if (part?.type !== "text") return result;
  content[i] = { ...part, text: `${part.text}\n\n${note}` };
  return { ...result, content };
}

/** What became of an nbformat 3 file (docs/notebook-tool.md, "nbformat 3 notebooks"). */
function upgradeNote(shownPath: string, from: number, when: "saved" | "run" | "unchanged"): string {
  const head = `Note: ${shownPath} is an nbformat ${from} notebook; it was upgraded to nbformat 4.5 as Jupyter does`;
  if (when === "saved") return `${head}, and saved as 4.5.`;
  // A run still going in the background saves each cell as it finishes.
  if (when === "run") return `${head}; the run saves it as 4.5 with its outputs.`;
  return `${head}, for this call only: the file is unchanged (a change to it saves it as 4.5).`;
}
