/**
 * What `nbagent run` prints when a cell stops its notebook: which cell, an excerpt of its source and
 * the traceback, the way nbclient's CellExecutionError message reads (rules: docs/cli.md).
 */

import { stripAnsi } from "../output/index.js";
import type { CellRunReport } from "../runtime/notebook-run.js";

/** Source lines shown at most, and characters per line. */
const SOURCE_LINES = 20;
const LINE_CHARS = 300;
const RULE = "-".repeat(18);

export interface FailureOptions {
  /** The notebook as the user named it. */
  notebook: string;
  /** The cell's source. */
  source: string;
  /** Keep the traceback's ANSI colours (stderr is a terminal). */
  color: boolean;
}

/** The kernel went idle without replying to the cell's request (the execution's `no-reply` notice). */
export function wentIdleWithoutReply(report: CellRunReport): boolean {
  return report.result?.notices.some((n) => n.kind === "no-reply") === true;
}

/** What the run's output says about such a cell (the notebook tool's words, docs/cli.md). */
export const NO_REPLY =
  "the kernel went idle without replying to it (its request handler failed; the kernel's log says why)";

/** The block for a cell that failed (error) or ended its run (timeout, kernel death, interrupt). */
export function formatCellFailure(report: CellRunReport, options: FailureOptions): string {
  const r = report.result;
  const where = `cell ${report.index}${report.id ? ` (id ${report.id})` : ""}`;
  const what = r?.kernelDied
    ? "the kernel died while it ran"
    : r?.timedOut
      ? "it timed out and was interrupted"
      : r?.cancelled
        ? "it was interrupted"
        : wentIdleWithoutReply(report)
          ? r?.error && r.error.name !== "NoReply"
            ? `it raised an error and ${NO_REPLY}`
            : NO_REPLY
          : "it raised an error";
  const lines = [`${options.notebook}: ${where} failed: ${what}; the notebook stopped there.`, RULE];
  lines.push(...excerpt(options.source), RULE, "");
  const error = r?.error;
  if (error) {
    const tb = error.traceback.length ? error.traceback.join("\n") : `${error.name}: ${error.value}`;
    lines.push(options.color ? tb : stripAnsi(tb));
  }
  return `${lines.join("\n")}\n`;
}

function excerpt(source: string): string[] {
  const all = source.split("\n");
  const shown = all
    .slice(0, SOURCE_LINES)
    .map((l) => (l.length > LINE_CHARS ? `${l.slice(0, LINE_CHARS)}… (${l.length} characters)` : l));
  if (all.length > SOURCE_LINES) shown.push(`… (${all.length - SOURCE_LINES} more lines)`);
  return shown;
}
