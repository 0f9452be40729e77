/**
 * JSON outputs (application/json displays) as a tree: collapsed, two levels with at most a few
 * entries per container; expanded, everything, paginated at PAGE_LINES lines. Whatever is not drawn
 * is counted on a line of its own, never dropped silently.
 */
import { plural } from "../sys/units.js";
import { COLLAPSED, type RenderOptions } from "./format.js";
import type { RenderTheme } from "./theme.js";

/** Lines of one JSON value drawn when expanded; the rest is counted. */
export const PAGE_LINES = 400;

interface Limits {
  depth: number;
  entries: number;
}

function scalar(v: unknown, t: RenderTheme): string {
  if (typeof v === "string") return t.fg("string", JSON.stringify(v));
  if (typeof v === "number" || typeof v === "bigint") return t.fg("number", String(v));
  if (typeof v === "boolean" || v === null) return t.fg("literal", String(v));
  return t.fg("muted", String(JSON.stringify(v) ?? v));
}

function isContainer(v: unknown): v is object {
  return v !== null && typeof v === "object";
}

function size(v: object): number {
  return Array.isArray(v) ? v.length : Object.keys(v).length;
}

function summary(v: object, t: RenderTheme): string {
  const n = size(v);
  return Array.isArray(v)
    ? t.fg("muted", `[…] ${plural(n, "item")}`)
    : t.fg("muted", `{…} ${plural(n, "key")}`);
}

/** A container whose JSON is short, drawn on one line (nested ones too). */
function inline(v: object, t: RenderTheme): string | undefined {
  const plain = JSON.stringify(v);
  if (plain === undefined || plain.length > 48) return undefined;
  const draw = (x: unknown): string => {
    if (!isContainer(x)) return scalar(x, t);
    if (Array.isArray(x)) return `[${x.map(draw).join(", ")}]`;
    const parts = Object.entries(x).map(([k, y]) => `${t.fg("jsonKey", JSON.stringify(k))}: ${draw(y)}`);
    return `{${parts.join(", ")}}`;
  };
  return draw(v);
}

function walk(v: unknown, label: string, depth: number, lim: Limits, t: RenderTheme, out: string[]): void {
  const pad = "  ".repeat(depth);
  if (!isContainer(v)) {
    out.push(pad + label + scalar(v, t));
    return;
  }
  const n = size(v);
  const short = inline(v, t);
  if (short !== undefined) {
    out.push(pad + label + short);
    return;
  }
  if (depth >= lim.depth) {
    out.push(`${pad}${label}${t.fg("accent", "▸ ")}${summary(v, t)}`);
    return;
  }
  out.push(`${pad}${label}${t.fg("accent", "▾ ")}${summary(v, t)}`);
  const entries: [string, unknown][] = Array.isArray(v)
    ? v.map((x, i) => [t.fg("muted", `${i}: `), x])
    : Object.entries(v).map(([k, x]) => [`${t.fg("jsonKey", JSON.stringify(k))}: `, x]);
  const shown = entries.slice(0, lim.entries);
  for (const [k, x] of shown) walk(x, k, depth + 1, lim, t, out);
  if (n > shown.length) {
    out.push(
      `${pad}  ${t.fg("dim", `… ${plural(n - shown.length, Array.isArray(v) ? "more item" : "more key")}`)}`,
    );
  }
}

/** One JSON value's lines (not yet wrapped to the width). */
export function jsonTreeLines(value: unknown, o: RenderOptions): string[] {
  const lim: Limits = o.expanded
    ? { depth: Number.POSITIVE_INFINITY, entries: Number.POSITIVE_INFINITY }
    : { depth: 2, entries: 5 };
  const out: string[] = [];
  walk(value, "", 0, lim, o.theme, out);
  const page = o.expanded ? PAGE_LINES : COLLAPSED.json;
  if (out.length <= page) return out;
  const more = out.length - page;
  return [
    ...out.slice(0, page),
    o.theme.fg(
      "dim",
      `… ${plural(more, "more line")} of this JSON not drawn (${plural(out.length, "line")} in all)`,
    ),
  ];
}
