/**
 * One notebook as the view page holds it, changed by the protocol's messages (src/view/protocol.ts).
 * Pure data, no DOM: the page renders from it, and the server can keep the same model to send a
 * new page its snapshot. `apply` says what changed, so the page re-renders only that.
 */
import {
  type CellType,
  joinSource,
  type MimeBundle,
  type RunState,
  type ViewCell,
  type ViewMessage,
  type ViewOutput,
} from "./protocol.js";

export interface ModelCell {
  id: string;
  cell_type: CellType;
  source: string;
  outputs: ViewOutput[];
  execution_count: number | null;
  state: RunState;
  attachments?: Record<string, MimeBundle>;
  /** Bumped on every change of this cell: the page re-renders a cell whose version it has not drawn. */
  version: number;
  /** clear_output(wait=True) seen: the next output replaces the ones there. */
  clearPending: boolean;
}

export type ModelChange =
  | { kind: "reset" }
  | { kind: "inserted"; index: number }
  | { kind: "changed"; index: number }
  | { kind: "moved"; from: number; to: number }
  | { kind: "deleted"; index: number }
  | { kind: "closed" }
  /** The message could not be applied (a cell the model does not have, a position past the end). */
  | { kind: "rejected"; reason: string };

function toModelCell(cell: ViewCell): ModelCell {
  return {
    id: cell.id,
    cell_type: cell.cell_type,
    source: joinSource(cell.source),
    outputs: (cell.outputs ?? []).map(normalizeOutput),
    execution_count: cell.execution_count ?? null,
    state: "idle",
    attachments: cell.attachments,
    version: 0,
    clearPending: false,
  };
}

/** A stream's text as a terminal would leave it: `\r` returns to the line's start, `\b` erases. */
export function settleStreamText(text: string): string {
  if (!/[\r\b]/.test(text)) return text;
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  return lines
    .map((line) => {
      let out = "";
      let at = 0;
      for (const ch of line) {
        if (ch === "\r") at = 0;
        else if (ch === "\b") at = Math.max(0, at - 1);
        else {
          out = out.slice(0, at) + ch + out.slice(at + 1);
          at++;
        }
      }
      return out;
    })
    .join("\n");
}

function normalizeOutput(output: ViewOutput): ViewOutput {
  if (output.output_type === "stream") return { ...output, text: joinSource(output.text) };
  return output;
}

export class NotebookModel {
  cells: ModelCell[] = [];
  language = "python";

  constructor(readonly path: string) {}

  indexOf(id: string): number {
    return this.cells.findIndex((c) => c.id === id);
  }

  apply(message: ViewMessage): ModelChange {
    if (message.path !== this.path) return { kind: "rejected", reason: `message for ${message.path}` };
    switch (message.kind) {
      case "notebook": {
        this.cells = message.cells.map(toModelCell);
        if (message.language) this.language = message.language;
        // Cells that run (or wait to) as the snapshot is taken; an id the notebook lacks marks nothing.
        const states = new Map<string, RunState>();
        for (const id of message.queued ?? []) states.set(id, "queued");
        for (const id of message.running ?? []) states.set(id, "running");
        if (states.size) for (const c of this.cells) c.state = states.get(c.id) ?? "idle";
        return { kind: "reset" };
      }
      case "notebook-closed":
        this.cells = [];
        return { kind: "closed" };
      case "cell-inserted": {
        if (message.index > this.cells.length)
          return {
            kind: "rejected",
            reason: `index ${message.index} is past the end (${this.cells.length})`,
          };
        if (this.indexOf(message.cell.id) >= 0)
          return { kind: "rejected", reason: `cell ${message.cell.id} is already there` };
        this.cells.splice(message.index, 0, toModelCell(message.cell));
        return { kind: "inserted", index: message.index };
      }
      default:
        break;
    }
    const index = this.indexOf(message.id);
    if (index < 0) return { kind: "rejected", reason: `no cell ${message.id}` };
    const cell = this.cells[index];
    switch (message.kind) {
      case "cell-deleted":
        this.cells.splice(index, 1);
        return { kind: "deleted", index };
      case "cell-moved": {
        if (message.to >= this.cells.length)
          return { kind: "rejected", reason: `position ${message.to} is past the end` };
        this.cells.splice(index, 1);
        this.cells.splice(message.to, 0, cell);
        return { kind: "moved", from: index, to: message.to };
      }
      case "cell-edited":
        cell.source = joinSource(message.source);
        if (message.cell_type) cell.cell_type = message.cell_type;
        break;
      case "cell-running":
        cell.state = message.state;
        if (message.execution_count !== undefined) cell.execution_count = message.execution_count;
        break;
      case "outputs-cleared":
        if (message.wait) cell.clearPending = true;
        else cell.outputs = [];
        break;
      case "output-appended": {
        if (cell.clearPending) {
          cell.outputs = [];
          cell.clearPending = false;
        }
        const output = normalizeOutput(message.output);
        const last = cell.outputs[cell.outputs.length - 1];
        if (output.output_type === "stream" && last?.output_type === "stream" && last.name === output.name)
          cell.outputs[cell.outputs.length - 1] = { ...last, text: joinSource(last.text) + output.text };
        else cell.outputs.push(output);
        if (output.output_type === "execute_result" && output.execution_count != null)
          cell.execution_count = output.execution_count;
        break;
      }
      case "output-replaced":
        if (message.index >= cell.outputs.length)
          return { kind: "rejected", reason: `cell ${message.id} has no output ${message.index}` };
        cell.outputs[message.index] = normalizeOutput(message.output);
        break;
    }
    cell.version++;
    return { kind: "changed", index };
  }
}
