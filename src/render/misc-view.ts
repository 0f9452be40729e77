/**
 * Views of the artifact and runs tools, and the plain view any other tool gets: the call's
 * parameters on one line, the result's text (a few lines collapsed, all expanded).
 */
import { pluralBare } from "../sys/units.js";
import { artifactDescriptor } from "../tools/artifact/artifact.js";
import { runsDescriptor } from "../tools/runs/runs.js";
import { block, COLLAPSED, isObject, type RenderOptions } from "./format.js";
import { errorBlock } from "./notebook-view.js";
import { isPythonDetails, pythonResultLines } from "./python-view.js";
import { cleanText, wrapLine } from "./width.js";

type Content = ReadonlyArray<{ type: string; text?: string; data?: string; mimeType?: string }>;

/** `tool key=value …` */
export function genericCallLines(toolName: string, args: unknown, o: RenderOptions): string[] {
  const t = o.theme;
  const a = isObject(args) ? args : {};
  const parts = [t.bold(t.fg("toolTitle", toolName))];
  for (const [k, v] of Object.entries(a)) {
    const value = typeof v === "string" ? v : JSON.stringify(v);
    parts.push(`${t.fg("muted", `${k}=`)}${cleanText(value ?? "")}`);
  }
  return wrapLine(parts.join(" "), o.width);
}

export function artifactCallLines(args: unknown, o: RenderOptions): string[] {
  const t = o.theme;
  const a = isObject(args) ? args : {};
  const id = typeof a.id === "string" ? a.id : "?";
  const parts = [
    t.bold(t.fg("toolTitle", artifactDescriptor.name)),
    t.fg("accent", id.startsWith("artifact://") ? id : `artifact://${id}`),
  ];
  if (typeof a.pattern === "string") parts.push(t.fg("muted", `/${a.pattern}/`));
  if (typeof a.offset === "number")
    parts.push(t.fg("dim", `from line ${a.offset}${typeof a.column === "number" ? `:${a.column}` : ""}`));
  if (typeof a.limit === "number") parts.push(t.fg("dim", `limit ${a.limit}`));
  return wrapLine(parts.join(" "), o.width);
}

export function runsCallLines(args: unknown, o: RenderOptions): string[] {
  const t = o.theme;
  const a = isObject(args) ? args : {};
  const parts = [t.bold(t.fg("toolTitle", runsDescriptor.name)), t.fg("accent", String(a.action ?? "wait"))];
  if (typeof a.run_id === "string") parts.push(a.run_id);
  if (typeof a.wait === "number") parts.push(t.fg("dim", `wait ${a.wait}s`));
  return wrapLine(parts.join(" "), o.width);
}

/** The text as it is, a few lines when collapsed (the head: the first lines say what it is). */
export function textResultLines(content: Content, isError: boolean, o: RenderOptions): string[] {
  const t = o.theme;
  const text = content
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
  if (isError) return errorBlock(text, undefined, o);
  const lines = cleanText(text).split("\n");
  const out = block(lines, o, COLLAPSED.output);
  const images = content.filter((c) => c.type === "image").length;
  if (images) out.push(t.fg("accent", `[${pluralBare(images, "image")}]`));
  return out;
}

export function artifactResultLines(
  content: Content,
  details: unknown,
  isError: boolean,
  o: RenderOptions,
): string[] {
  const t = o.theme;
  if (isError) return textResultLines(content, true, o);
  const d = isObject(details) ? details : {};
  const text = content
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
  const lines = cleanText(text).split("\n");
  const out: string[] = [];
  const what =
    typeof d.startLine === "number" && typeof d.endLine === "number"
      ? `lines ${d.startLine}-${d.endLine} of ${d.lines ?? "?"}`
      : isObject(d.search)
        ? `${d.search.total} matching lines of ${d.lines ?? "?"}`
        : undefined;
  if (what) out.push(`${t.fg("success", "✓")} ${t.fg("muted", what)}`);
  out.push(
    ...block(
      lines.map((l) => (l.startsWith("Next: ") ? t.fg("dim", l) : l)),
      o,
      COLLAPSED.output,
    ),
  );
  return out;
}

export function runsResultLines(
  content: Content,
  details: unknown,
  isError: boolean,
  o: RenderOptions,
): string[] {
  const text = content
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
  if (!isPythonDetails(details)) return textResultLines(content, isError, o);
  const notebook = Array.isArray((details as unknown as Record<string, unknown>).ranCells);
  return pythonResultLines(text, details, content, o, notebook);
}
