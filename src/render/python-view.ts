/**
 * The python tool's views (also a notebook run's, which answers alike): the call shows each cell's
 * code, highlighted; the result shows each cell as `[i/n] title` with its status (pending, a spinner
 * and time while running, complete or error with its duration), its output (the tail when
 * collapsed, with `… N more lines`), status events, JSON outputs as trees and images; then the
 * tool's own notes and closing lines, and where the whole output is kept (artifact://<id>).
 * The output text is the model's, split at the cell headers the tool wrote (docs/render.md).
 */

import { thousands } from "../sys/thousands.js";
import { plural } from "../sys/units.js";
import { deathReasonText } from "../tools/kernel-text.js";
import { pythonDescriptor } from "../tools/python/python.js";
import {
  cellHeader,
  leadingNotes,
  type PythonCellDetails,
  type PythonToolDetails,
  summaryLines,
} from "../tools/python/result.js";
import { block, COLLAPSED, duration, isObject, type RenderOptions, spinner } from "./format.js";
import { highlightLines } from "./highlight.js";
import { imageLines } from "./images.js";
import { jsonTreeLines } from "./json-tree.js";
import type { RenderTheme } from "./theme.js";
import { cleanText, wrapLine } from "./width.js";

type Content = ReadonlyArray<{ type: string; text?: string; data?: string; mimeType?: string }>;

export function isPythonDetails(d: unknown): d is PythonToolDetails {
  return isObject(d) && Array.isArray(d.cells) && isObject(d.output) && Array.isArray(d.images);
}

/** Call view: options on the title line, then each cell's code (a few lines when collapsed). */
export function pythonCallLines(args: unknown, o: RenderOptions): string[] {
  const t = o.theme;
  const a = isObject(args) ? args : {};
  const cells = Array.isArray(a.cells) ? a.cells.filter(isObject) : [];
  const opts: string[] = [];
  if (typeof a.session === "string") opts.push(`session ${a.session}`);
  if (a.mode === "per-call") opts.push("per-call");
  if (a.reset === true) opts.push("reset");
  if (typeof a.notebook_path === "string") opts.push(`in ${a.notebook_path}'s kernel`);
  if (typeof a.timeout === "number") opts.push(`timeout ${a.timeout}s`);
  if (typeof a.wait === "number") opts.push(`wait ${a.wait}s`);
  if (typeof a.cwd === "string") opts.push(`cwd ${a.cwd}`);
  const head = [
    t.bold(t.fg("toolTitle", pythonDescriptor.name)),
    t.fg("muted", plural(cells.length, "cell")),
    ...opts.map((x) => t.fg("dim", x)),
  ].join(" ");
  const lines = [head];
  cells.forEach((c, k) => {
    const title = typeof c.title === "string" ? c.title : undefined;
    if (cells.length > 1 || title) lines.push(t.fg("accent", cellHeader(k + 1, cells.length, title)));
    const code = typeof c.code === "string" ? c.code : "";
    lines.push(...block(highlightLines(code.replace(/\n$/, ""), "python", t), o, COLLAPSED.code));
  });
  return lines;
}

/** The status mark and words of one cell. */
function statusLine(
  c: PythonCellDetails,
  pos: number,
  n: number,
  o: RenderOptions,
  notebook: boolean,
): string {
  const t = o.theme;
  const now = o.now ?? Date.now();
  const name = notebook ? `[${pos}/${n}] ${c.title ?? `cell ${c.index}`}` : cellHeader(pos, n, c.title);
  const took = c.durationMs !== undefined ? t.fg("dim", ` · ${duration(c.durationMs)}`) : "";
  switch (c.status) {
    case "pending":
      return `${t.fg("dim", "○")} ${t.fg("muted", name)} ${t.fg("dim", "pending")}`;
    case "running": {
      const elapsed = o.startedAt !== undefined ? ` ${duration(Math.max(0, now - o.startedAt))}` : "";
      return `${t.fg("accent", spinner(now))} ${t.bold(name)} ${t.fg("accent", `running${elapsed}`)}`;
    }
    case "ok":
      return `${t.fg("success", "✓")} ${t.bold(name)}${took}`;
    case "error": {
      const what = c.error ? ` ${c.error.name}: ${c.error.value}` : "";
      const role = c.allowedError ? "warning" : "error";
      return `${t.fg(role, "✗")} ${t.bold(name)}${took}${t.fg(role, `${what}${c.allowedError ? " (allowed)" : ""}`)}`;
    }
    case "aborted": {
      const a = c.abort;
      const why =
        a?.kind === "timeout"
          ? `timed out after ${a.seconds}s`
          : a?.kind === "cancelled"
            ? "interrupted"
            : a?.kind === "kernel-died"
              ? `kernel died (${deathReasonText(a.reason, a.cause)})`
              : a?.kind === "failed"
                ? "did not run"
                : (a?.kind ?? "aborted").replace(/-/g, " ");
      return `${t.fg("warning", "⊘")} ${t.bold(name)}${took} ${t.fg("warning", why)}`;
    }
    default:
      return `${t.fg("dim", "–")} ${t.fg("muted", name)} ${t.fg("dim", "not run")}`;
  }
}

/** Styles one line of the model's output text: cut markers and notices stand out. */
function outputLine(line: string, t: RenderTheme): string {
  // \u2026 is the ellipsis: the built CLI must stay ASCII (scripts/bundle.mjs).
  if (/^\u2026 \[.*(not shown|shown before)\]$/.test(line)) return t.fg("dim", line);
  if (
    /^\[cell .*(artifact:\/\/|could not be saved)/.test(line) ||
    /^\[cell [^\]]*: [\d,]+ lines? \(/.test(line)
  )
    return t.fg("warning", line);
  if (/\u2026 \[line cut: [\d,]+ more characters\]$/.test(line)) {
    const at = line.lastIndexOf("… [line cut:");
    return line.slice(0, at) + t.fg("dim", line.slice(at));
  }
  return line;
}

interface Sections {
  prefix: string[];
  /** Output lines per cell position (1-based). */
  cells: Map<number, string[]>;
  footer: string[];
}

/**
 * Splits the model's text at the headers the tool wrote for each started cell, in order; the
 * tool's own notes and closing lines (same functions that wrote them) go before and after.
 * Undefined when the text does not have that shape (then it is drawn whole).
 */
function splitText(text: string, d: PythonToolDetails, notebook: boolean): Sections | undefined {
  const lines = cleanText(text).split("\n");
  const n = d.cells.length;
  const started = d.cells
    .map((c, k) => ({ c, pos: k + 1 }))
    .filter(({ c }) => c.output !== undefined || c.status === "running");
  const headers = started.map(({ c, pos }) => (notebook ? `[${c.title}]` : cellHeader(pos, n, c.title)));
  const noHeaders = !notebook && n === 1;
  const at: number[] = [];
  let from = 0;
  if (!noHeaders) {
    for (const h of headers) {
      const i = lines.indexOf(h, from);
      if (i < 0) return undefined;
      at.push(i);
      from = i + 1;
    }
  }
  const notes = leadingNotes(d).flatMap((x) => x.split("\n"));
  let prefixEnd = at[0] ?? 0;
  if (noHeaders) {
    // the notes, when the text starts with them, then the cell's output
    prefixEnd = notes.every((l, k) => lines[k] === l) ? notes.length : 0;
    if (started.length) at.push(prefixEnd - 1);
  }
  if (at.length === 0 && started.length) return undefined;
  const summary = summaryLines(d).flatMap((x) => x.split("\n"));
  let footerAt = lines.length;
  if (summary.length) {
    const last = at[at.length - 1] ?? prefixEnd - 1;
    for (let i = lines.length - summary.length; i > last; i--) {
      if (summary.every((l, k) => lines[i + k] === l)) {
        footerAt = i;
        break;
      }
    }
  }
  // export_notebook's line closes the text (docs/python-tool.md, "The session as a notebook")
  const exportLine = lines.length - 1;
  if (d.exported !== undefined || /^Not exported: /.test(lines[exportLine] ?? ""))
    footerAt = Math.min(footerAt, Math.max(exportLine, (at[at.length - 1] ?? prefixEnd - 1) + 1));
  const cells = new Map<number, string[]>();
  started.forEach(({ pos }, k) => {
    const end = k + 1 < at.length ? at[k + 1] : footerAt;
    let body = lines.slice(at[k] + 1, end);
    if (body.length === 1 && (body[0] === "(ok)" || body[0] === "")) body = [];
    cells.set(pos, body);
  });
  const prefix = lines.slice(0, noHeaders ? prefixEnd : (at[0] ?? footerAt));
  let footer = lines.slice(footerAt);
  if (!started.length) {
    // nothing ran: whatever is between the prefix and the footer is drawn as the footer
    footer = lines.slice(prefix.length);
  }
  return { prefix, cells, footer };
}

/**
 * A run that outlived its call (docs/runs.md) wraps the tool's text: `Still running …` and a line
 * naming what follows, then the output, then the runs call to make; or `Run r1 (…) finished after
 * N s. Its result:` before the call's own text. Split off, they are drawn as the head and tail.
 */
export function runEnvelope(text: string, d: unknown): { head: string[]; body: string; tail: string[] } {
  const lines = text.split("\n");
  const run = isObject(d) && isObject(d.run) ? d.run : undefined;
  if (run?.status === "running" && lines.length >= 3 && lines[0].startsWith("Still running")) {
    return { head: [lines[0]], body: lines.slice(2, -1).join("\n"), tail: lines.slice(-1) };
  }
  if (/^Run \S+ \(.*\) finished after /.test(lines[0] ?? "")) {
    return { head: [lines[0]], body: lines.slice(1).join("\n"), tail: [] };
  }
  return { head: [], body: text, tail: [] };
}

/** Result view of a python call (or a notebook run: `notebook` names cells by notebook index). */
export function pythonResultLines(
  text: string,
  d: PythonToolDetails,
  content: Content,
  o: RenderOptions,
  notebook = false,
): string[] {
  const t = o.theme;
  const envelope = runEnvelope(text, d);
  text = envelope.body;
  const out: string[] = envelope.head.flatMap((l) => wrapLine(t.fg("accent", cleanText(l)), o.width));
  const n = d.cells.length;
  const sections = splitText(text, d, notebook);
  const sent = content.filter((c) => c.type === "image");
  let nextSent = 0;
  const images = d.images.map((img) => ({
    ...img,
    data: img.included ? sent[nextSent++]?.data : undefined,
  }));
  const notes = new Set(leadingNotes(d).flatMap((x) => x.split("\n")));
  if (sections) {
    for (const l of sections.prefix) out.push(...wrapLine(notes.has(l) ? t.fg("warning", l) : l, o.width));
  }
  d.cells.forEach((c, k) => {
    const pos = k + 1;
    out.push(...wrapLine(statusLine(c, pos, n, o, notebook), o.width));
    // a JSON output's text form is drawn as its tree below
    const jsonText = new Set(d.jsonOutputs.filter((x) => x.cell === pos).map((x) => JSON.stringify(x.data)));
    const body = sections?.cells.get(pos)?.filter((l) => !jsonText.has(l));
    if (body?.length) {
      out.push(
        ...block(
          // a separator rule (IPython's 75 dashes) is drawn to the width, not wrapped
          body.map((l) =>
            outputLine(/^([-=_\u2500\u2501])\1{9,}$/.test(l) ? l.slice(0, Math.max(10, o.width - 2)) : l, t),
          ),
          o,
          COLLAPSED.output,
          { from: "tail" },
        ),
      );
    }
    const events = d.statusEvents.filter((e) => e.cell === pos);
    if (events.length) {
      const lines = events.map((e) => {
        const { op, cell: _cell, ...rest } = e;
        const fields = Object.entries(rest).map(([key, v]) => `${key}=${JSON.stringify(v)}`);
        return `${t.fg("accent", "•")} ${t.fg("muted", String(op))} ${t.fg("dim", fields.join(" "))}`.trimEnd();
      });
      out.push(...block(lines, o, 3, { from: "tail", noun: "earlier status event" }));
    }
    for (const j of d.jsonOutputs.filter((x) => x.cell === pos)) {
      out.push(
        ...block(jsonTreeLines(j.data, o), o, Number.POSITIVE_INFINITY, { gutter: t.fg("border", "┆ ") }),
      );
    }
    for (const img of images.filter((x) => x.cell === pos)) {
      const shown = img.included
        ? {
            data: img.data,
            mimeType: img.sentMimeType ?? img.mimeType,
            width: img.sentWidth ?? img.width,
            height: img.sentHeight ?? img.height,
          }
        : undefined;
      if (shown) out.push(...imageLines(shown, o, o.width - 2).map((l) => `  ${l}`));
      else {
        const size = img.width && img.height ? ` ${img.width}×${img.height}` : "";
        out.push(`  ${t.fg("warning", `[image${size} not included: ${img.reason ?? "unknown reason"}]`)}`);
      }
    }
  });
  if (sections) {
    for (const l of sections.footer) {
      const role = /^Cell \d+ (failed|timed out|did not|was interrupted)/.test(l) ? "error" : "warning";
      out.push(...wrapLine(t.fg(role, l), o.width));
    }
  } else {
    out.push(
      ...block(
        cleanText(text)
          .split("\n")
          .map((l) => outputLine(l, t)),
        o,
        COLLAPSED.output,
        { from: "tail" },
      ),
    );
  }
  if (d.droppedImages) out.push(t.fg("warning", `${plural(d.droppedImages, "earlier image")} not included`));
  const whole = d.output;
  if (whole.truncated && whole.artifactUri) {
    out.push(
      ...wrapLine(
        `${t.fg("warning", "⚠ output cut")} ${t.fg("dim", `(${thousands(whole.totalLines)} lines in all); whole output:`)} ${t.fg("accent", whole.artifactUri)}`,
        o.width,
      ),
    );
  } else if (whole.artifactError) {
    out.push(...wrapLine(t.fg("error", `⚠ output cut; not saved: ${whole.artifactError}`), o.width));
  }
  for (const l of envelope.tail) out.push(...wrapLine(t.fg("dim", cleanText(l)), o.width));
  if (!o.expanded && d.durationMs) out.push(t.fg("dim", `took ${duration(d.durationMs)}`));
  else if (d.durationMs)
    out.push(
      t.fg(
        "dim",
        `took ${duration(d.durationMs)} · session ${d.session} (${d.mode === "per-call" ? "per-call kernel" : "kept kernel"})`,
      ),
    );
  return out;
}
