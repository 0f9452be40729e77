/** One small handler per action of the notebook tool (docs/notebook-tool.md). */
import type { NotebookAction } from "../params.js";
import { clearOutputs } from "./clear-outputs.js";
import type { ActionHandler } from "./context.js";
import { remove } from "./delete.js";
import { edit } from "./edit.js";
import { insert } from "./insert.js";
import { move } from "./move.js";
import { read } from "./read.js";
import { replace } from "./replace.js";
import { run } from "./run.js";
import { tags } from "./tags.js";

export const HANDLERS: Record<NotebookAction, ActionHandler> = {
  edit,
  replace,
  insert,
  delete: remove,
  read,
  move,
  clear_outputs: clearOutputs,
  tags,
  run,
};

export { type ActionContext, type ActionHandler, ToolError, withSaveNotes } from "./context.js";
export { createWithCell } from "./create.js";
