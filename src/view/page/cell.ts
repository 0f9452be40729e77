/**
 * One cell as DOM: the `In [n]:` prompt (`[*]` while it runs), the source — code highlighted,
 * markdown rendered, raw as text — and a code cell's outputs. A cell element carries its id
 * (`data-id`) and the model version it shows, so the notebook view redraws only cells that changed.
 */
import type { ModelCell } from "../notebook-model.js";
import { highlightHtml } from "./highlight.js";
import { renderMarkdown } from "./markdown.js";
import { renderOutput } from "./outputs.js";

export function promptText(cell: ModelCell): string {
  if (cell.state === "running") return "[*]:";
  if (cell.state === "queued") return "[ ]:";
  return `[${cell.execution_count ?? " "}]:`;
}

export function renderCell(doc: Document, cell: ModelCell, language: string): HTMLElement {
  const el = doc.createElement("div");
  el.className = `nb-cell nb-cell-${cell.cell_type}`;
  if (cell.state !== "idle") el.classList.add(`nb-cell-${cell.state}`);
  el.dataset.id = cell.id;
  el.dataset.version = String(cell.version);

  const input = doc.createElement("div");
  input.className = "nb-input";
  const prompt = doc.createElement("div");
  prompt.className = "nb-prompt";
  if (cell.cell_type === "code") prompt.textContent = promptText(cell);
  input.append(prompt);
  if (cell.cell_type === "markdown") {
    const body = doc.createElement("div");
    body.className = "nb-markdown";
    body.append(renderMarkdown(doc, cell.source, cell.attachments));
    input.append(body);
  } else {
    const code = doc.createElement("pre");
    code.className = cell.cell_type === "code" ? "nb-source hljs" : "nb-source nb-raw";
    if (cell.cell_type === "code") code.innerHTML = highlightHtml(cell.source, language);
    else code.textContent = cell.source;
    input.append(code);
  }
  el.append(input);

  if (cell.cell_type === "code" && cell.outputs.length > 0) {
    const outputs = doc.createElement("div");
    outputs.className = "nb-outputs";
    for (const output of cell.outputs) outputs.append(renderOutput(doc, output));
    el.append(outputs);
  }
  return el;
}
