/**
 * nbformat 3 → 4, as `nbformat.read(path, as_version=4)` does it and `nbformat.write` then writes
 * it (nbformat's v3 reader joining lines, `nbformat.v4.convert.upgrade`, the v4 writer splitting
 * them again and dropping transient fields): worksheets flattened into one cell list; heading cells
 * become markdown cells with `#`s; a code cell's `input` becomes `source`, `prompt_number`
 * `execution_count`, `collapsed` goes into its metadata and `language` goes; outputs `pyout` →
 * `execute_result`, `pyerr` → `error`, a stream's `stream` → `name`, and mime aliases (`text`,
 * `html`, `png`, …) become a `data` bundle of mime types. The result is nbformat 4.5 with new cell
 * ids (nbformat adds random ones when it validates). Ours are derived from each cell's type and
 * source (and how many identical cells come before it), so every load gives a cell the same id while
 * it is unchanged: a `cell_id` from a `read` still names its cell in the next call, and a run whose
 * file another writer changed before its first save still finds the cells that writer left alone. Rules: docs/notebook-tool.md ("nbformat 3 notebooks").
 */
import { createHash } from "../sys/crypto.js";
import { type JsonObject, type JsonValue, parseJson, RawNumber } from "./json.js";
import { splitLines, splitOutputLines } from "./lines.js";
import { type Cell, type Notebook, NotebookStructureError } from "./model.js";

const MIME_ALIASES: [string, string][] = [
  ["text", "text/plain"],
  ["html", "text/html"],
  ["svg", "image/svg+xml"],
  ["png", "image/png"],
  ["jpeg", "image/jpeg"],
  ["latex", "text/latex"],
  ["json", "application/json"],
  ["javascript", "application/javascript"],
];
/** Output fields nbformat's v3 reader joins when they are line lists. */
const MULTILINE_OUTPUTS = new Set(["text", "html", "svg", "latex", "javascript", "json"]);

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof RawNumber);
}

/** nbformat v3's `_join_lines`: lines written by splitlines(True) join plainly, others with "\n". */
function joinV3Lines(lines: JsonValue[]): JsonValue {
  if (!lines.every((l) => typeof l === "string")) return lines;
  const strings = lines as string[];
  return strings.length > 0 && /[\n\r]$/.test(strings[0]) ? strings.join("") : strings.join("\n");
}

/** The v3 reader joins a line list; a string stays as it is. */
function joined(v: JsonValue | undefined): JsonValue | undefined {
  return Array.isArray(v) ? joinV3Lines(v) : v;
}

/** Python's `" ".join(s.splitlines())`. */
function oneLine(s: string): string {
  return splitLines(s)
    .map((l) => l.replace(/(?:\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029])$/, ""))
    .join(" ");
}

function toMimeKeys(d: JsonObject): void {
  for (const [alias, mime] of MIME_ALIASES) {
    if (Object.hasOwn(d, alias)) {
      d[mime] = d[alias];
      delete d[alias];
    }
  }
}

function upgradeOutput(raw: JsonValue, cellIndex: number): JsonObject {
  if (!isObject(raw))
    throw new NotebookStructureError(`cell ${cellIndex} has an output that is not an object`);
  const output: JsonObject = { ...raw };
  for (const key of MULTILINE_OUTPUTS) {
    if (Object.hasOwn(output, key)) output[key] = joined(output[key]) ?? null;
  }
  const type = output.output_type;
  if (type === "pyout" || type === "display_data") {
    if (!Object.hasOwn(output, "metadata")) output.metadata = {};
    if (type === "pyout") {
      output.output_type = "execute_result";
      output.execution_count = output.prompt_number ?? null;
      delete output.prompt_number;
    }
    const data: JsonObject = {};
    for (const key of Object.keys(output)) {
      if (key === "output_type" || key === "execution_count" || key === "metadata") continue;
      data[key] = output[key];
      delete output[key];
    }
    toMimeKeys(data);
    output.data = data;
    if (isObject(output.metadata)) toMimeKeys(output.metadata);
    const json = data["application/json"];
    if (typeof json === "string") {
      try {
        data["application/json"] = parseJson(json);
      } catch {
        throw new NotebookStructureError(`cell ${cellIndex} has a json output that is not JSON`);
      }
    }
  } else if (type === "pyerr") {
    output.output_type = "error";
  } else if (type === "stream") {
    output.name = output.stream ?? "stdout";
    delete output.stream;
  }
  splitOutputLines(output);
  return output;
}

function upgradeCell(raw: JsonValue, index: number): Cell {
  if (!isObject(raw)) throw new NotebookStructureError(`cell ${index} is not an object`);
  const cell: JsonObject = { ...raw };
  const metadata: JsonObject = isObject(cell.metadata) ? { ...cell.metadata } : {};
  delete metadata.trusted;
  cell.metadata = metadata;
  if (cell.cell_type === "code") {
    delete cell.language;
    if (Object.hasOwn(cell, "collapsed")) {
      metadata.collapsed = cell.collapsed;
      delete cell.collapsed;
    }
    cell.source = joined(cell.input) ?? "";
    delete cell.input;
    cell.execution_count = cell.prompt_number ?? null;
    delete cell.prompt_number;
    const outputs = Array.isArray(cell.outputs) ? cell.outputs : [];
    cell.outputs = outputs.map((o) => upgradeOutput(o, index));
  } else {
    for (const key of ["source", "rendered"])
      if (Object.hasOwn(cell, key)) cell[key] = joined(cell[key]) ?? null;
    if (cell.cell_type === "heading") {
      cell.cell_type = "markdown";
      const level =
        typeof cell.level === "number"
          ? cell.level
          : cell.level instanceof RawNumber
            ? Number(cell.level.text)
            : 1;
      delete cell.level;
      const source = typeof cell.source === "string" ? cell.source : "";
      cell.source = `${"#".repeat(level)} ${oneLine(source)}`;
    } else if (cell.cell_type === "html") {
      cell.cell_type = "markdown";
    }
  }
  if (typeof cell.source !== "string") {
    throw new NotebookStructureError(`cell ${index} source is not a string or list of strings`);
  }
  cell.source = splitLines(cell.source);
  return cell as Cell;
}

/** Whether this JSON is an nbformat 3 notebook (its cells in worksheets). */
export function isNbformat3(value: JsonValue): boolean {
  if (!isObject(value)) return false;
  const v = value.nbformat;
  return (v === 3 || (v instanceof RawNumber && v.text === "3")) && Array.isArray(value.worksheets);
}

/**
 * The nbformat 4.5 notebook nbformat makes of an nbformat 3 one (a new value; the input is not
 * changed). Throws NotebookStructureError for what nbformat could not convert either.
 */
export function upgradeFromV3(value: JsonValue): Notebook {
  if (!isObject(value) || !Array.isArray(value.worksheets))
    throw new NotebookStructureError("missing worksheets");
  const nb: JsonObject = { ...value };
  const metadata: JsonObject = isObject(nb.metadata) ? { ...nb.metadata } : {};
  for (const key of ["name", "signature", "orig_nbformat", "orig_nbformat_minor"]) delete metadata[key];
  delete nb.orig_nbformat;
  delete nb.orig_nbformat_minor;
  const worksheets = nb.worksheets as JsonValue[];
  delete nb.worksheets;
  const raw: JsonValue[] = [];
  worksheets.forEach((ws, i) => {
    if (!isObject(ws) || !Array.isArray(ws.cells))
      throw new NotebookStructureError(`worksheet ${i} has no cells list`);
    raw.push(...ws.cells);
  });
  const used = new Set<string>();
  const cells = raw.map((c, i) => {
    const cell = upgradeCell(c, i);
    const source = Array.isArray(cell.source) ? cell.source.join("") : String(cell.source ?? "");
    const content = createHash("sha256").update(`${cell.cell_type}\0${source}`).digest("hex");
    let id: string;
    let n = 0;
    do id = createHash("sha256").update(`${content}:${n++}`).digest("hex").slice(0, 8);
    while (used.has(id));
    used.add(id);
    cell.id = id;
    return cell;
  });
  nb.metadata = metadata;
  nb.nbformat = 4;
  nb.nbformat_minor = 5;
  nb.cells = cells;
  return nb as Notebook;
}
