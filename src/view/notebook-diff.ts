/**
 * A notebook file's cells as the view's messages name them, and the patches that take what the page
 * has (a NotebookModel) to what the file holds now (docs/view.md, "Notebooks in the view"). Pure:
 * no files, no clocks.
 *
 * - Cells are matched by id. A cell without one (nbformat < 4.5) is named by its content — `nbagent-`
 *   and a digest of its type and source, with a count for identical cells — so an edit of it reads
 *   as a delete and an insert, never as a guess at which cell it was. A second cell with an id
 *   already taken (an invalid file) gets `<id>#2`, `#3`, ….
 * - Outputs are put in one canonical shape (multiline strings joined, consecutive streams of one
 *   name merged, MIME values bounded as the events bound them: runtime/event-output.ts), so an output
 *   that arrived live and the same output read back from the file compare equal and are not redrawn.
 */
import { createHash } from "node:crypto";
import { boundBundle } from "../runtime/event-output.js";
import type { ModelCell } from "./notebook-model.js";
import { type CellType, joinSource, type ViewCell, type ViewMessage, type ViewOutput } from "./protocol.js";

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const text = (v: unknown): string =>
  Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : "")).join("") : typeof v === "string" ? v : "";

/** A MIME bundle with its multiline strings joined (JSON values, `…json` types, stay as they are). */
function canonicalBundle(data: unknown): Record<string, unknown> {
  if (!isObject(data)) return {};
  const out: Record<string, unknown> = {};
  for (const [mime, value] of Object.entries(data))
    out[mime] =
      /json$/.test(mime) || !(Array.isArray(value) || typeof value === "string") ? value : text(value);
  return boundBundle(out).data;
}

/** One output in the canonical shape; undefined for something that is not an nbformat output. */
export function canonicalOutput(o: unknown): ViewOutput | undefined {
  if (!isObject(o)) return undefined;
  switch (o.output_type) {
    case "stream":
      return { output_type: "stream", name: o.name === "stderr" ? "stderr" : "stdout", text: text(o.text) };
    case "display_data":
      return {
        output_type: "display_data",
        data: canonicalBundle(o.data),
        metadata: isObject(o.metadata) ? o.metadata : {},
      };
    case "execute_result":
      return {
        output_type: "execute_result",
        data: canonicalBundle(o.data),
        metadata: isObject(o.metadata) ? o.metadata : {},
        execution_count: typeof o.execution_count === "number" ? o.execution_count : null,
      };
    case "error":
      return {
        output_type: "error",
        ename: String(o.ename ?? ""),
        evalue: String(o.evalue ?? ""),
        traceback: Array.isArray(o.traceback) ? o.traceback.map(String) : [],
      };
    default:
      return undefined;
  }
}

/** A cell's outputs in the canonical shape, consecutive streams of one name merged. */
export function canonicalOutputs(outputs: unknown): ViewOutput[] {
  const out: ViewOutput[] = [];
  if (!Array.isArray(outputs)) return out;
  for (const raw of outputs) {
    const o = canonicalOutput(raw);
    if (!o) continue;
    const last = out[out.length - 1];
    if (o.output_type === "stream" && last?.output_type === "stream" && last.name === o.name)
      out[out.length - 1] = { ...last, text: joinSource(last.text) + joinSource(o.text) };
    else out.push(o);
  }
  return out;
}

const CELL_TYPES = new Set(["code", "markdown", "raw"]);

/**
 * The cells of a parsed .ipynb, or why they cannot be read (not nbformat 4, no cells list). A cell
 * of an unknown type is shown as raw.
 */
export function cellsOfFile(json: unknown): { cells: ViewCell[]; language?: string } | { error: string } {
  if (!isObject(json)) return { error: "not a JSON object" };
  if (json.nbformat !== 4 || !Array.isArray(json.cells))
    return { error: `not an nbformat 4 notebook (nbformat ${JSON.stringify(json.nbformat)})` };
  const taken = new Map<string, number>();
  const unique = (id: string): string => {
    const n = (taken.get(id) ?? 0) + 1;
    taken.set(id, n);
    return n === 1 ? id : `${id}#${n}`;
  };
  const cells = json.cells.map((raw): ViewCell => {
    const c = isObject(raw) ? raw : {};
    const cell_type = (CELL_TYPES.has(c.cell_type as string) ? c.cell_type : "raw") as CellType;
    const source = text(c.source);
    const id =
      typeof c.id === "string" && c.id
        ? c.id
        : `nbagent-${createHash("sha1").update(cell_type).update("\0").update(source).digest("hex").slice(0, 12)}`;
    const cell: ViewCell = { id: unique(id), cell_type, source };
    if (cell_type === "code") {
      cell.outputs = canonicalOutputs(c.outputs);
      cell.execution_count = typeof c.execution_count === "number" ? c.execution_count : null;
    }
    if (isObject(c.attachments)) cell.attachments = c.attachments as ViewCell["attachments"];
    return cell;
  });
  const meta = isObject(json.metadata) ? json.metadata : {};
  const info = isObject(meta.language_info) ? meta.language_info : {};
  const spec = isObject(meta.kernelspec) ? meta.kernelspec : {};
  const language =
    typeof info.name === "string" ? info.name : typeof spec.language === "string" ? spec.language : undefined;
  return language ? { cells, language } : { cells };
}

/** JSON with object keys sorted, for comparing values whose key order may differ (a file's, the kernel's). */
function stable(v: unknown): string {
  return JSON.stringify(v, (_k, value) =>
    isObject(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, value[k]]),
        )
      : value,
  );
}

export function sameOutput(a: ViewOutput, b: ViewOutput): boolean {
  if (a === b) return true;
  if (a.output_type !== b.output_type) return false;
  if (a.output_type === "stream" && b.output_type === "stream")
    return a.name === b.name && joinSource(a.text) === joinSource(b.text);
  return stable(a) === stable(b);
}

/** The messages that take a cell's outputs from `before` to `after`, redrawing as little as they can. */
export function outputPatches(
  path: string,
  id: string,
  before: ViewOutput[],
  after: ViewOutput[],
): ViewMessage[] {
  let p = 0;
  while (p < before.length && p < after.length && sameOutput(before[p], after[p])) p++;
  if (p === before.length && p === after.length) return [];
  const all = (): ViewMessage[] => [
    { kind: "outputs-cleared", path, id },
    ...after.map((output): ViewMessage => ({ kind: "output-appended", path, id, output })),
  ];
  if (after.length < before.length) return all();
  const out: ViewMessage[] = [];
  for (let i = p; i < before.length; i++) {
    const was = before[i];
    const now = after[i];
    const last = i === before.length - 1;
    if (
      last &&
      was.output_type === "stream" &&
      now.output_type === "stream" &&
      was.name === now.name &&
      joinSource(now.text).startsWith(joinSource(was.text))
    ) {
      out.push({
        kind: "output-appended",
        path,
        id,
        output: { ...now, text: joinSource(now.text).slice(joinSource(was.text).length) },
      });
    } else out.push({ kind: "output-replaced", path, id, index: i, output: now });
  }
  for (let i = before.length; i < after.length; i++) {
    const prev = after[i - 1];
    const o = after[i];
    // Would continue the stream before it on the page (canonical outputs never have two in a row).
    if (o.output_type === "stream" && prev?.output_type === "stream" && prev.name === o.name) return all();
    out.push({ kind: "output-appended", path, id, output: o });
  }
  return out;
}

/** The longest increasing subsequence of `xs` (indices into it). */
function lis(xs: number[]): Set<number> {
  const tails: number[] = [];
  const prev: number[] = new Array(xs.length).fill(-1);
  for (let i = 0; i < xs.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[tails[mid]] < xs[i]) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[i] = tails[lo - 1];
    tails[lo] = i;
  }
  const out = new Set<number>();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) out.add(i);
  return out;
}

const sameAttachments = (a: unknown, b: unknown) => stable(a ?? null) === stable(b ?? null);

/**
 * The messages that take the page's cells (`before`, the model) to the file's (`after`): deletes,
 * the fewest moves (every cell off the longest run that kept its order), inserts, then each kept
 * cell's source, outputs and count. Cells in `live` (running, or ran and not yet saved) keep their
 * outputs and count: the live events are newer than the file.
 */
export function diffCells(
  path: string,
  before: readonly ModelCell[],
  after: readonly ViewCell[],
  live: ReadonlySet<string> = new Set(),
): ViewMessage[] {
  const out: ViewMessage[] = [];
  const target = new Map(after.map((c, i) => [c.id, i]));
  // A cell whose attachments changed is replaced whole (no message changes attachments).
  const replaced = new Set(
    before
      .filter((c) => {
        const i = target.get(c.id);
        return i !== undefined && !sameAttachments(c.attachments, after[i].attachments);
      })
      .map((c) => c.id),
  );
  const working: string[] = [];
  for (const c of before) {
    if (target.has(c.id) && !replaced.has(c.id)) working.push(c.id);
    else out.push({ kind: "cell-deleted", path, id: c.id });
  }
  const kept = new Set(working);
  // Kept cells in the file's order; those off the longest increasing run (by their place now) move.
  const order = after.filter((c) => kept.has(c.id)).map((c) => c.id);
  const place = new Map(working.map((id, i) => [id, i]));
  const stay = lis(order.map((id) => place.get(id)!));
  order.forEach((id, k) => {
    if (stay.has(k)) return;
    const from = working.indexOf(id);
    working.splice(from, 1);
    const to = k === 0 ? 0 : working.indexOf(order[k - 1]) + 1;
    working.splice(to, 0, id);
    out.push({ kind: "cell-moved", path, id, to });
  });
  after.forEach((c, i) => {
    if (kept.has(c.id)) return;
    working.splice(i, 0, c.id);
    out.push({ kind: "cell-inserted", path, index: i, cell: c });
  });
  const was = new Map(before.map((c) => [c.id, c]));
  for (const c of after) {
    const m = was.get(c.id);
    if (!m || !kept.has(c.id)) continue;
    const source = joinSource(c.source);
    if (m.source !== source || m.cell_type !== c.cell_type)
      out.push({
        kind: "cell-edited",
        path,
        id: c.id,
        source,
        ...(m.cell_type !== c.cell_type ? { cell_type: c.cell_type } : {}),
      });
    if (live.has(c.id)) continue;
    out.push(...outputPatches(path, c.id, m.outputs, c.outputs ?? []));
    const count = c.cell_type === "code" ? (c.execution_count ?? null) : null;
    if (c.cell_type === "code" && m.execution_count !== count)
      out.push({ kind: "cell-running", path, id: c.id, state: "idle", execution_count: count });
  }
  return out;
}

/**
 * A .ipynb file's text as cells, or why not: a file caught mid-write by another program (cut
 * JSON) or not a notebook is an error, and the feed keeps what it showed until the next change.
 */
export function parseNotebook(content: string): { cells: ViewCell[]; language?: string } | { error: string } {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (err) {
    return { error: `not valid JSON (${(err as Error).message}); a writer may be midway` };
  }
  return cellsOfFile(json);
}
