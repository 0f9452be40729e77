/**
 * The Jupyter widgets a kernel holds, followed through their comm messages on IOPub (target
 * `jupyter.widget`: comm_open, then `update`s, comm_close), and written into a notebook's
 * `metadata.widgets` as nbclient's `store_widget_state` writes it, so nbconvert, nbviewer and a
 * JupyterLab without a kernel can draw the saved widget views (docs/runs.md, "Widget state").
 *
 * Both wire protocols are read: ipywidgets 7 and 8 (protocol 2: `data.state` and `buffer_paths`)
 * and ipywidgets 6 (protocol 1: the state is `data` itself, binary keys in `data.buffers`).
 */
import type { JupyterMessage } from "../kernel/types.js";
import type { Notebook } from "../notebook/index.js";

/** The mime key of saved widget state in `metadata.widgets`. */
export const WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json";

const TARGET = "jupyter.widget";

type JsonObject = Record<string, unknown>;
type BufferPath = (string | number)[];

interface WidgetModel {
  state: JsonObject;
  /** Binary parts of the state by their path (JSON of it), as nbclient keeps them: base64. */
  buffers: Map<string, { data: string; encoding: "base64"; path: BufferPath }>;
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export class WidgetStates {
  private readonly models = new Map<string, WidgetModel>();
  /** The widget protocol's major version the kernel speaks (the saved state's version_major). */
  private protocol = 2;

  get size(): number {
    return this.models.size;
  }

  /** Takes one IOPub message; others than widget comm messages are ignored. */
  handle(msg: JupyterMessage): void {
    const type = msg.header.msg_type;
    const content = msg.content as JsonObject;
    const commId = typeof content.comm_id === "string" ? content.comm_id : undefined;
    if (!commId) return;
    if (type === "comm_close") {
      this.models.delete(commId);
      return;
    }
    const data = isObject(content.data) ? content.data : undefined;
    if (!data) return;
    if (type === "comm_open") {
      if (content.target_name !== TARGET) return;
      // Protocol 2 wraps the state; protocol 1 sends it as the data itself.
      const wrapped = isObject(data.state);
      const state = wrapped ? (data.state as JsonObject) : data;
      if (typeof state._model_name !== "string") return;
      this.protocol = wrapped ? 2 : 1;
      const model: WidgetModel = { state: { ...state }, buffers: new Map() };
      this.models.set(commId, model);
      this.takeBuffers(model, data, msg.buffers);
      return;
    }
    if (type !== "comm_msg") return;
    const model = this.models.get(commId);
    if (!model || data.method !== "update" || !isObject(data.state)) return;
    Object.assign(model.state, data.state);
    this.takeBuffers(model, data, msg.buffers);
  }

  /** The binary parts of a message: protocol 2 names each by a path, protocol 1 by a top-level key. */
  private takeBuffers(model: WidgetModel, data: JsonObject, buffers: Uint8Array[] | undefined): void {
    if (!buffers?.length) return;
    const paths: BufferPath[] = Array.isArray(data.buffer_paths)
      ? (data.buffer_paths.filter(Array.isArray) as BufferPath[])
      : Array.isArray(data.buffers)
        ? data.buffers.filter((k) => typeof k === "string").map((k) => [k as string])
        : [];
    paths.forEach((path, i) => {
      const buffer = buffers[i];
      if (!buffer) return;
      const data = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength).toString("base64");
      model.buffers.set(JSON.stringify(path), { data, encoding: "base64", path });
    });
  }

  /** The value of `metadata.widgets[WIDGET_STATE_MIME]`: every live widget's model and state. */
  saved(): JsonObject {
    const state: JsonObject = {};
    for (const [id, model] of this.models) {
      const s = model.state;
      state[id] = {
        model_name: s._model_name,
        model_module: s._model_module ?? null,
        model_module_version: s._model_module_version ?? null,
        state: structuredClone(s),
        ...(model.buffers.size > 0 && { buffers: [...model.buffers.values()].map((b) => ({ ...b })) }),
      };
    }
    return { state, version_major: this.protocol, version_minor: 0 };
  }
}

/**
 * Writes the widgets' state into the notebook's metadata when the kernel holds any (as nbclient,
 * which leaves `metadata.widgets` alone when there are none); returns whether it changed.
 */
export function recordWidgetState(nb: Notebook, widgets: WidgetStates | undefined): boolean {
  if (!widgets || widgets.size === 0) return false;
  const metadata = (isObject(nb.metadata) ? nb.metadata : {}) as JsonObject;
  const current = isObject(metadata.widgets) ? metadata.widgets : {};
  const saved = widgets.saved();
  if (JSON.stringify(current[WIDGET_STATE_MIME]) === JSON.stringify(saved)) return false;
  nb.metadata = { ...metadata, widgets: { ...current, [WIDGET_STATE_MIME]: saved } } as Notebook["metadata"];
  return true;
}
