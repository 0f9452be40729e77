/**
 * Turns one execution's IOPub messages into nbformat v4 outputs, the way Jupyter saves them:
 * consecutive same-name streams merged (with `\r`/`\b` folded as if the stream had come in one write:
 * docs/output.md), execute_result with its execution_count,
 * display_data, error, clear_output (immediate, or deferred to the next output when `wait`),
 * update_display_data by display_id across every cell of the notebook, and `transient` never saved.
 * Optionally records per-cell timing in `metadata.execution` as nbclient does.
 */
import type { JupyterMessage } from "../kernel/types.js";
import { StreamFolder } from "./stream-text.js";
import type { WidgetStates } from "./widget-state.js";

export type NbOutput = Record<string, unknown> & { output_type: string };

/** Joins a multiline field that may be a string or nbformat's list of lines. */
export function joinText(value: unknown): string {
  return Array.isArray(value) ? value.join("") : typeof value === "string" ? value : "";
}

/**
 * display_id → where outputs carrying it live, for a whole notebook (nbclient's _display_id_map).
 * Cells are named by a key that survives edits (the cell id, or an index when a notebook has no ids).
 */
export class DisplayRegistry {
  private readonly targets = new Map<string, Map<string, number[]>>();

  register(displayId: string, cellKey: string, outputIndex: number): void {
    let cells = this.targets.get(displayId);
    if (!cells) {
      cells = new Map();
      this.targets.set(displayId, cells);
    }
    const indices = cells.get(cellKey);
    if (indices) indices.push(outputIndex);
    else cells.set(cellKey, [outputIndex]);
  }

  /** A cell's outputs were cleared: forget where its displays were. */
  clearCell(cellKey: string): void {
    for (const cells of this.targets.values()) cells.delete(cellKey);
  }

  lookup(displayId: string): ReadonlyMap<string, number[]> | undefined {
    return this.targets.get(displayId);
  }
}

export interface CellCollectorOptions {
  cellKey: string;
  /** The cell's outputs array; the collector mutates it in place (callers pass a fresh []). */
  outputs: NbOutput[];
  registry: DisplayRegistry;
  /** Finds another cell's outputs array by key, for update_display_data (undefined if gone). */
  outputsOf: (cellKey: string) => NbOutput[] | undefined;
  /** Cell metadata to record timing into (metadata.execution), when given. */
  timingMetadata?: Record<string, unknown>;
  /** The kernel's widgets, followed through their comm messages (saved with the notebook). */
  widgets?: WidgetStates;
}

const OUTPUT_TYPES = new Set(["stream", "display_data", "execute_result", "error"]);

export class CellOutputCollector {
  executionCount: number | null = null;
  private clearBeforeNext = false;
  /** The last stream output and its text as the kernel sent it, folded whole (docs/output.md). */
  private stream?: { output: NbOutput; folder: StreamFolder };
  private readonly timing?: Record<string, string>;

  constructor(private readonly options: CellCollectorOptions) {
    if (options.timingMetadata) {
      this.timing = {};
      options.timingMetadata.execution = this.timing;
    }
  }

  get outputs(): NbOutput[] {
    return this.options.outputs;
  }

  handle(msg: JupyterMessage): void {
    const type = msg.header.msg_type;
    const content = msg.content as Record<string, unknown>;
    const displayId = (content.transient as { display_id?: string } | undefined)?.display_id;
    if (
      displayId &&
      (type === "execute_result" || type === "display_data" || type === "update_display_data")
    ) {
      this.updateDisplays(displayId, content);
    }
    if (typeof content.execution_count === "number") this.executionCount = content.execution_count;
    if (this.timing) this.recordTiming(type, content, msg.header.date);

    if (type === "clear_output") this.clearOutput(content.wait === true);
    else if (OUTPUT_TYPES.has(type)) this.append(type, content, displayId);
    else if (type.startsWith("comm_")) this.options.widgets?.handle(msg);
  }

  /** The shell reply arrived (nbclient records it as shell.execute_reply). */
  replied(date: string | undefined, executionCount: number | null): void {
    if (executionCount !== null) this.executionCount = executionCount;
    if (this.timing && date) this.timing["shell.execute_reply"] = date;
  }

  private recordTiming(type: string, content: Record<string, unknown>, date: string | undefined): void {
    if (!date || !this.timing) return;
    if (type === "status") {
      if (content.execution_state === "busy") this.timing["iopub.status.busy"] = date;
      else if (content.execution_state === "idle") this.timing["iopub.status.idle"] = date;
    } else if (type === "execute_input") this.timing["iopub.execute_input"] = date;
  }

  private clearOutput(wait: boolean): void {
    if (wait) {
      this.clearBeforeNext = true;
      return;
    }
    this.options.outputs.length = 0;
    this.options.registry.clearCell(this.options.cellKey);
  }

  private append(type: string, content: Record<string, unknown>, displayId: string | undefined): void {
    const outputs = this.options.outputs;
    if (this.clearBeforeNext) {
      outputs.length = 0;
      this.options.registry.clearCell(this.options.cellKey);
      this.clearBeforeNext = false;
    }
    if (type === "stream") {
      const name = String(content.name ?? "stdout");
      const text = String(content.text ?? "");
      const last = outputs[outputs.length - 1];
      if (last && last.output_type === "stream" && last.name === name) {
        if (this.stream?.output !== last)
          this.stream = { output: last, folder: new StreamFolder(joinText(last.text)) };
        this.stream.folder.append(text);
        last.text = this.stream.folder.text;
      } else {
        const folder = new StreamFolder(text);
        const output: NbOutput = { output_type: "stream", name, text: folder.text };
        this.stream = { output, folder };
        outputs.push(output);
      }
      return;
    }
    const output = toOutput(type, content);
    if (displayId) this.options.registry.register(displayId, this.options.cellKey, outputs.length);
    outputs.push(output);
  }

  private updateDisplays(displayId: string, content: Record<string, unknown>): void {
    const targets = this.options.registry.lookup(displayId);
    if (!targets) return;
    for (const [cellKey, indices] of targets) {
      const outputs =
        cellKey === this.options.cellKey ? this.options.outputs : this.options.outputsOf(cellKey);
      if (!outputs) continue;
      for (const i of indices) {
        const target = outputs[i];
        if (!target) continue;
        target.data = copyBundle(content.data);
        target.metadata = copyBundle(content.metadata);
      }
    }
  }
}

function copyBundle(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" ? { ...(value as Record<string, unknown>) } : {};
}

/** nbformat's output_from_msg: the saved shape of one output (transient dropped). */
export function toOutput(type: string, content: Record<string, unknown>): NbOutput {
  switch (type) {
    case "execute_result":
      return {
        output_type: "execute_result",
        data: copyBundle(content.data),
        metadata: copyBundle(content.metadata),
        execution_count: typeof content.execution_count === "number" ? content.execution_count : null,
      };
    case "display_data":
      return {
        output_type: "display_data",
        data: copyBundle(content.data),
        metadata: copyBundle(content.metadata),
      };
    case "error":
      return {
        output_type: "error",
        ename: String(content.ename ?? ""),
        evalue: String(content.evalue ?? ""),
        traceback: Array.isArray(content.traceback) ? content.traceback.map(String) : [],
      };
    default:
      return {
        output_type: "stream",
        name: String(content.name ?? "stdout"),
        text: String(content.text ?? ""),
      };
  }
}
