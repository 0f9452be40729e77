/**
 * The words for a call's output (docs/output.md): each cell's header and shown lines, a marker where
 * lines were left out or a line was cut, a notice per cut cell saying how much it produced and where
 * the whole is in the artifact (with the artifact tool call that reads it), and the names of outputs
 * the model cannot see.
 */
import type { DisplayOutput } from "../kernel/types.js";
import { shownRanges } from "../output/select.js";
import type { ArtifactIncomplete, CellDump, OutputDump } from "../output/sink.js";
import { thousands as count } from "../sys/thousands.js";
import { bytesWholeKB, plural } from "../sys/units.js";
import { type BundleImageHooks, bundleModelText } from "./bundle-text.js";

function rangeList(ranges: [number, number][]): string {
  const parts = ranges.map(([a, b]) => (a === b ? count(a) : `${count(a)}-${count(b)}`));
  const list =
    parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : parts[0];
  const one = ranges.length === 1 && ranges[0][0] === ranges[0][1];
  return `${one ? "line" : "lines"} ${list}`;
}

/** The model's text for a live display: the bundle's text (bundle-text.ts) from its converted text. */
export function displayModelText(display: DisplayOutput, hooks: BundleImageHooks = {}): string {
  return bundleModelText(display.data, hooks, display.text);
}

/** `[cell 2: 40,000 lines (1.2 MB); showing lines 1-20 and 39,981-40,000. All of it: artifact://…]` */
export function cutNotice(cell: CellDump, name: string, dump: OutputDump): string {
  const since = cell.clears > 0 ? " since its last clear_output" : "";
  const ranges = shownRanges(cell.shown);
  const cutLines = cell.shown.filter((l) => l.cutChars > 0);
  const allShown = cell.shown.length === cell.lines;
  const parts = [`[${name}${since}: ${plural(cell.lines, "line")} (${bytesWholeKB(cell.bytes)})`];
  if (!allShown) parts.push(`; showing ${rangeList(ranges)}`);
  if (cutLines.length) parts.push(`; ${plural(cutLines.length, "long line")} cut`);
  parts.push(".");
  const id = dump.artifactId;
  if (!id) {
    if (dump.artifactError) {
      parts.push(
        ` The output could not be saved (${saveFailure(dump.artifactError)}); only what is shown here is left.`,
      );
    }
    return `${parts.join("")}]`;
  }
  const first = cell.firstArtifactLine;
  const last = first + cell.lines + cell.artifactExtra - 1;
  // read from the first line not shown, or the first cut line (or from where the artifact holds an
  // updated display's earlier states: its lines from there on are not the view's)
  let hidden = 1;
  for (const l of cell.shown) {
    if (l.n !== hidden || l.cutChars > 0) break;
    hidden++;
  }
  hidden = Math.min(hidden, cell.linearBefore);
  const readFrom = first + hidden - 1;
  const incomplete = dump.artifactIncomplete;
  if (incomplete) {
    parts.push(` ${keptWords(id, incomplete, dump.totalBytes)}`);
    if (readFrom <= incomplete.keptLines) {
      parts.push(` Read what was kept with the artifact tool: ${JSON.stringify({ id, offset: readFrom })}]`);
    } else {
      parts.push(` The lines of ${name} not shown here were not saved.]`);
    }
    return parts.join("");
  }
  const where = first === last ? `line ${count(first)}` : `lines ${count(first)}-${count(last)}`;
  parts.push(
    ` All of it: artifact://${id}, ${where}. Read it with the artifact tool: ${JSON.stringify({ id, offset: readFrom })}]`,
  );
  return parts.join("");
}

/** Why an artifact stopped taking writes, in words: "the disk is full (ENOSPC: …)". */
export function saveFailure(message: string | undefined, reason?: string): string {
  const code = reason ?? /^([A-Z][A-Z0-9]+):/.exec(message ?? "")?.[1];
  const why =
    code === "ENOSPC"
      ? "the disk is full"
      : code === "EDQUOT"
        ? "the disk quota is used up"
        : code === "EFBIG"
          ? "the file size limit was reached"
          : "writing it failed";
  return message ? `${why}: ${message}` : why;
}

/** "Only the first 1,048,576 of the output's 1,600,000 bytes were saved, to artifact://… (lines 1-20,561, the last in part) — …" */
function keptWords(id: string, incomplete: ArtifactIncomplete, totalBytes: number): string {
  const { keptBytes, keptLines, lastLinePartial } = incomplete;
  const lines =
    keptLines === 0
      ? "nothing"
      : `${keptLines === 1 ? "line 1" : `lines 1-${count(keptLines)}`}${lastLinePartial ? ", the last in part" : ""}`;
  return `Only the first ${count(keptBytes)} of the output's ${count(totalBytes)} bytes were saved, to artifact://${id} (${lines}) — ${saveFailure(incomplete.message, incomplete.reason)}; the rest is lost.`;
}

export interface OutputTextCell {
  /** How the text names the cell: `cell ${details.cells[k].index}`. */
  name: string;
  /** Shown as `(ok)` when it printed nothing. */
  okWhenEmpty: boolean;
  /** Lines before this one were shown in an earlier look at a run still going (docs/runs.md). */
  startAt?: number;
}

/** The body: per cell its header, shown lines with cut markers, and its notice when cut. */
export function outputText(dump: OutputDump, cells: OutputTextCell[]): string {
  const out: string[] = [];
  for (const [k, cell] of dump.cells.entries()) {
    const meta = cells[k];
    if (cell.header !== undefined) out.push(cell.header);
    if (cell.lines === 0) {
      if (meta?.okWhenEmpty) out.push("(ok)");
      continue;
    }
    let next = 1;
    const startAt = meta?.startAt ?? 1;
    if (startAt > 1) {
      out.push(`… [${startAt === 2 ? "line 1" : `lines 1-${count(startAt - 1)}`} shown before]`);
      next = startAt;
    }
    for (const line of cell.shown) {
      if (line.n < startAt) continue;
      if (line.n > next) out.push(`… [${plural(line.n - next, "line")} not shown]`);
      out.push(
        line.cutChars > 0 ? `${line.text}… [line cut: ${count(line.cutChars)} more characters]` : line.text,
      );
      next = line.n + 1;
    }
    if (next <= cell.lines) out.push(`… [${plural(cell.lines - next + 1, "line")} not shown]`);
    if (cell.cut) out.push(cutNotice(cell, meta?.name ?? `cell ${k + 1}`, dump));
  }
  return out.join("\n");
}
