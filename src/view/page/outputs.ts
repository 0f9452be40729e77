/**
 * One output of a code cell as DOM, the richest MIME type the page can show first, in JupyterLab's
 * order (docs/view.md "What the page renders"). Nothing an output holds is parsed as HTML in the
 * page: text is text nodes, images are <img> of data: URLs (SVG sanitized first), markdown goes
 * through markdown.ts's sanitizer, and HTML and JavaScript run only in sandboxed frames (frame.ts).
 */

import { settleStreamText } from "../notebook-model.js";
import { joinSource, type MimeBundle, type ViewOutput } from "../protocol.js";
import { ansiToFragment } from "./ansi.js";
import { sandboxedFrame } from "./frame.js";
import { renderJsonTree } from "./json-tree.js";
import { renderMarkdown, sanitizeSvg } from "./markdown.js";
import { latexBody, renderTex } from "./math.js";

const IMAGES = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"];

/** MIME types in the order they are preferred. Types ending in +json match the application/json renderer. */
export const MIME_ORDER = [
  "application/javascript",
  "text/html",
  "text/markdown",
  "text/latex",
  "image/svg+xml",
  ...IMAGES,
  "application/json",
  "text/plain",
];

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join("");
  return JSON.stringify(value, null, 2);
}

function pre(doc: Document, body: string, className: string): HTMLElement {
  const el = doc.createElement("pre");
  el.className = className;
  el.append(ansiToFragment(doc, body));
  return el;
}

/** The MIME type of the bundle the page shows, or undefined when none is known. */
export function chooseMime(data: MimeBundle): string | undefined {
  for (const mime of MIME_ORDER) if (data[mime] !== undefined) return mime;
  return Object.keys(data).find((m) => /^application\/.+\+json$/.test(m));
}

function image(doc: Document, mime: string, value: unknown, metadata: Record<string, unknown>): HTMLElement {
  const img = doc.createElement("img");
  img.className = "nb-image";
  img.alt = mime;
  img.src =
    mime === "image/svg+xml"
      ? sanitizeSvg(text(value))
      : `data:${mime};base64,${text(value).replace(/\s/g, "")}`;
  const meta = (metadata[mime] ?? {}) as { width?: unknown; height?: unknown };
  if (typeof meta.width === "number") img.width = meta.width;
  if (typeof meta.height === "number") img.height = meta.height;
  // in a box of its own: the output's body stretches, the image keeps its size
  const box = doc.createElement("div");
  box.className = "nb-image-box";
  box.append(img);
  return box;
}

function bundle(doc: Document, data: MimeBundle, metadata: Record<string, unknown>): HTMLElement {
  const mime = chooseMime(data);
  const value = mime ? data[mime] : undefined;
  if (mime === undefined) return pre(doc, `[no renderer for ${Object.keys(data).join(", ")}]`, "nb-text");
  if (mime === "text/html") return sandboxedFrame(doc, text(value));
  if (mime === "application/javascript")
    // the code as a script of the sandboxed frame, `</script` inside it escaped
    return sandboxedFrame(doc, `<script>${text(value).replace(/<\/(script)/gi, "<\\/$1")}</script>`);
  if (mime === "text/markdown") {
    const div = doc.createElement("div");
    div.className = "nb-markdown";
    div.append(renderMarkdown(doc, text(value)));
    return div;
  }
  if (mime === "text/latex") {
    const div = doc.createElement("div");
    div.className = "nb-latex";
    const { tex, display } = latexBody(text(value));
    renderTex(div, tex, display);
    return div;
  }
  if (mime === "image/svg+xml" || IMAGES.includes(mime)) return image(doc, mime, value, metadata);
  if (mime === "application/json" || mime.endsWith("+json")) {
    const parsed = typeof value === "string" ? safeParse(value) : value;
    return renderJsonTree(doc, parsed);
  }
  return pre(doc, text(value), "nb-text");
}

function safeParse(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** The element of one output, with its `Out[n]:` prompt for an execute_result. */
export function renderOutput(doc: Document, output: ViewOutput): HTMLElement {
  const area = doc.createElement("div");
  area.className = `nb-output nb-output-${output.output_type}`;
  const prompt = doc.createElement("div");
  prompt.className = "nb-prompt";
  if (output.output_type === "execute_result" && output.execution_count != null)
    prompt.textContent = `Out[${output.execution_count}]:`;
  area.append(prompt);
  let body: HTMLElement;
  switch (output.output_type) {
    case "stream":
      body = pre(doc, settleStreamText(joinSource(output.text)), `nb-text nb-stream-${output.name}`);
      break;
    case "error":
      body = pre(
        doc,
        (output.traceback ?? []).join("\n") || `${output.ename}: ${output.evalue}`,
        "nb-text nb-error",
      );
      break;
    default:
      body = bundle(doc, output.data ?? {}, output.metadata ?? {});
  }
  body.classList.add("nb-output-body");
  area.append(body);
  return area;
}
