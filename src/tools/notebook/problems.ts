/**
 * Words for an invalid notebook (docs/notebook-tool.md, "Invalid notebooks"): what nbformat would
 * reject, one short line per finding (cell index and id, field, what is wrong), for read's header and
 * for the note under any other result, saying whether the file was invalid before the call and
 * whether it still is after it.
 */
import {
  checkNotebook,
  type LoadedNotebook,
  type NotebookCheck,
  type NotebookProblem,
  type RepairedCellId,
} from "../../notebook/index.js";
import { pluralBare } from "../../sys/units.js";

/** Files up to this size have every output parsed and checked; larger ones only what a call reads. */
const BULK_CHECK_BYTES = 2_000_000;
const MAX_LINES = 12;

/**
 * Checks a loaded notebook. After a save, pass the check of the file as read: NaN/Infinity counted
 * in outputs left unchecked are carried over from it (the save kept them).
 */
export async function checkLoaded(loaded: LoadedNotebook, before?: NotebookCheck): Promise<NotebookCheck> {
  const bulk = loaded.fingerprint.size <= BULK_CHECK_BYTES;
  const check = await checkNotebook(loaded.notebook, { bulk, nonFinite: before ? 0 : loaded.nonFinite });
  const unseen = before?.problems.find((p) => p.kind === "not_json" && p.count !== undefined);
  if (unseen) {
    const at = check.problems.findIndex((p) => p.kind === "duplicate_id");
    check.problems.splice(at < 0 ? check.problems.length : at, 0, unseen);
  }
  return check;
}

function where(p: NotebookProblem): string {
  if (p.cell === undefined) return p.field === "" ? "notebook" : `notebook ${p.field}`;
  let s = `cell ${p.cell}${p.cellId !== undefined ? ` (id ${p.cellId})` : ""}`;
  if (p.output !== undefined) s += ` output ${p.output}`;
  return p.field === "" ? s : `${s} ${p.field}`;
}

function indexList(cells: number[]): string {
  return cells.length === 2
    ? `${cells[0]} and ${cells[1]}`
    : `${cells.slice(0, -1).join(", ")} and ${cells.at(-1)}`;
}

/** One line for one finding. */
export function problemLine(p: NotebookProblem, schema: string): string {
  const version = schema === "future" ? "a newer nbformat 4" : `nbformat ${schema}`;
  switch (p.kind) {
    case "not_json":
      return p.count !== undefined
        ? `${pluralBare(p.count, "NaN/Infinity value")} in outputs: not JSON`
        : `${where(p)} is ${p.value}: not JSON`;
    case "duplicate_id":
      return `cells ${indexList(p.cells ?? [])} share id ${JSON.stringify(p.value)}`;
    case "unknown_cell_type":
      return `${where({ ...p, field: "" })}: unknown cell_type ${p.value} (${version} knows "code", "markdown", "raw")`;
    case "unknown_output_type":
      return `${where({ ...p, field: "" })}: unknown output_type ${p.value}`;
    case "missing_key":
      return `${where(p)}: "${p.key}" is missing`;
    case "extra_key":
      return p.key === "id" && p.field === "" && p.cell !== undefined && p.output === undefined
        ? `${where(p)}: has an id, which ${version} does not allow (cell ids came with nbformat 4.5)`
        : `${where(p)}: "${p.key}" is not allowed here in ${version}`;
    case "wrong_type":
      return `${where(p)} is ${p.value}, must be ${p.expected}`;
    case "bad_value":
      return `${where(p)} is ${p.value}, must be ${p.expected}`;
  }
}

/** The finding lines (at most MAX_LINES, then how many more), each starting with "- ". */
export function problemLines(check: NotebookCheck): string[] {
  const lines = check.problems.slice(0, MAX_LINES).map((p) => `- ${problemLine(p, check.schema)}`);
  if (check.problems.length > MAX_LINES) lines.push(`- … and ${check.problems.length - MAX_LINES} more`);
  return lines;
}

/** What the invalidity means, beyond the schema: NaN and duplicate ids. */
function extras(check: NotebookCheck): string[] {
  const out: string[] = [];
  if (check.problems.some((p) => p.kind === "not_json")) {
    out.push(
      "NaN and Infinity are not JSON: Python's json reads them, but JupyterLab, VS Code and other JSON readers refuse the file.",
    );
  }
  if (check.problems.some((p) => p.kind === "duplicate_id")) {
    out.push("A shared cell id does not name one cell: address those cells by cell_index.");
  }
  return out;
}

function heading(check: NotebookCheck): string {
  const schemaOnes = check.problems.filter((p) => p.kind !== "not_json").length;
  return schemaOnes > 0 ? "nbformat would reject it:" : "it is not valid JSON:";
}

/** read's lines under the header: this notebook is invalid, and why. */
export function invalidReadLines(shownPath: string, check: NotebookCheck): string[] {
  if (check.problems.length === 0) return [];
  return [
    `Invalid notebook: ${shownPath} does not pass nbformat's checks; ${heading(check)}`,
    ...problemLines(check),
    ...extras(check),
  ];
}

const sig = (p: NotebookProblem) => JSON.stringify(p);

/**
 * The note under a result when the file was invalid before the call: what was wrong, and after a
 * save, whether it still is (nbagent repairs nothing on its own; only the change asked for is made).
 */
export function invalidNote(
  shownPath: string,
  before: NotebookCheck,
  after: NotebookCheck | "unsaved" | "ran",
): string | undefined {
  if (before.problems.length === 0) return undefined;
  const lines = [
    `Note: ${shownPath} was invalid before this call; ${heading(before)}`,
    ...problemLines(before),
  ];
  if (after === "unsaved") {
    lines.push("Nothing was written; it still is.");
  } else if (after === "ran") {
    lines.push(
      before.problems.some((p) => p.kind === "duplicate_id")
        ? "A run gives the cells that share an id fresh ids (as nbformat does on read) and records outputs; it changes nothing else."
        : "Running cells records outputs only; it still is otherwise.",
    );
  } else if (after.problems.length === 0) {
    lines.push("After this change it passes nbformat's checks.");
  } else if (
    after.problems.length === before.problems.length &&
    after.problems.every((p, i) => sig(p) === sig(before.problems[i]))
  ) {
    lines.push("It still is: the save changed only what was asked (nbagent repairs nothing on its own).");
  } else {
    lines.push("After this change it is still invalid:", ...problemLines(after));
  }
  // After a run the shared ids are gone: addressing those cells by id works again.
  lines.push(...extras(before).filter((e) => after !== "ran" || !e.startsWith("A shared cell id")));
  return lines.join("\n");
}

/**
 * What a run says when cells shared an id and it gave them fresh ones (lower case, no final stop:
 * the notebook tool makes it a sentence, the CLI's summary a clause).
 */
export function repairedIdsText(repaired: readonly RepairedCellId[]): string | undefined {
  if (repaired.length === 0) return undefined;
  const each = repaired.map((r) => `cell ${r.index} ${JSON.stringify(r.was)} → ${JSON.stringify(r.now)}`);
  const who = repaired.length === 1 ? "a cell had the id" : `${repaired.length} cells had the id`;
  return `${who} of a cell above it, which nbformat does not allow: given a fresh id as nbformat does on read, and saved before any cell ran (${each.join(", ")})`;
}
