/**
 * `nbagent run -j N`'s progress view on a terminal: each finished-cell line names its notebook, the
 * live area has one line per running notebook, and redrawing it leaves no stale lines. The writes
 * are played on a small screen model (\r, \n, ESC[1A, ESC[2K — the codes the view uses).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RunProgress } from "../../src/cli/run-progress.js";
import type { CellRunReport } from "../../src/runtime/notebook-run.js";

/** The screen the written text leaves: rows of characters, cursor moves and line erases applied. */
function screen(text: string): string[] {
  const rows: string[] = [""];
  let row = 0;
  let col = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\x1b") {
      const m = /^\x1b\[(\d*)([A-Za-z])/.exec(text.slice(i));
      if (!m) throw new Error(`unknown escape at ${i}`);
      if (m[2] === "A") row = Math.max(0, row - Number(m[1] || 1));
      else if (m[2] === "K") rows[row] = "";
      else throw new Error(`unexpected code ${m[0]}`);
      i += m[0].length - 1;
    } else if (ch === "\r") col = 0;
    else if (ch === "\n") {
      row++;
      col = 0;
      rows[row] ??= "";
    } else {
      const line = rows[row].padEnd(col);
      rows[row] = line.slice(0, col) + ch + line.slice(col + 1);
      col++;
    }
  }
  return rows;
}

const report = (index: number, status: CellRunReport["status"] = "ok"): CellRunReport =>
  ({ index, status, durationMs: 120 }) as CellRunReport;

describe("run progress with several notebooks on a terminal", () => {
  it("one live line per running notebook; finished lines name their notebook", () => {
    let out = "";
    const view = new RunProgress({ tty: true, color: false, parallel: true, write: (t) => (out += t) });
    view.notebookStart("a.ipynb", 2);
    view.notebookStart("b.ipynb", 1);
    view.cellStart("a.ipynb", 0, 1, 2);
    view.cellStart("b.ipynb", 0, 1, 1);
    let rows = screen(out);
    assert.deepEqual(rows.slice(0, 2), ["a.ipynb · 2 code cells", "b.ipynb · 1 code cells"]);
    assert.match(rows[2], /^ {2}\S a\.ipynb \[1\/2\] cell 0 running \d+\.\ds$/);
    assert.match(rows[3], /^ {2}\S b\.ipynb \[1\/1\] cell 0 running \d+\.\ds$/);
    assert.equal(rows.length, 4);

    view.cellEnd("b.ipynb", 1, 1, report(0), "");
    view.cellEnd("a.ipynb", 1, 2, report(0, "error"), ": ZeroDivisionError: division by zero");
    view.cellStart("a.ipynb", 1, 2, 2);
    rows = screen(out);
    assert.equal(rows[2], "  ✓ b.ipynb [1/1] cell 0 0.12s");
    assert.equal(rows[3], "  ✗ a.ipynb [1/2] cell 0 0.12s error: ZeroDivisionError: division by zero");
    assert.match(rows[4], /^ {2}\S a\.ipynb \[2\/2\] cell 1 running \d+\.\ds$/);
    assert.equal(rows.length, 5, rows.join("\n"));

    view.print("a notice\n");
    view.stop();
    rows = screen(out);
    assert.deepEqual(rows.slice(4), ["a notice", ""]);
  });

  it("a long notebook name is cut so the live line fits the terminal", () => {
    let out = "";
    const view = new RunProgress({
      tty: true,
      color: false,
      parallel: true,
      columns: 50,
      write: (t) => (out += t),
    });
    view.cellStart(`${"x".repeat(80)}.ipynb`, 3, 4, 10);
    const [line] = screen(out);
    assert.ok(line.length <= 49, line);
    assert.match(line, /x… \[4\/10\] cell 3 running \d+\.\ds$/);
    view.stop();
  });

  it("one notebook at a time: the lines look as before (no name on the cell lines)", () => {
    let out = "";
    const view = new RunProgress({ tty: true, color: false, write: (t) => (out += t) });
    view.cellStart("a.ipynb", 0, 1, 1);
    view.cellEnd("a.ipynb", 1, 1, report(0), "");
    view.stop();
    assert.deepEqual(screen(out), ["  ✓ [1/1] cell 0 0.12s", ""]);
  });
});
