/**
 * `nbagent run`'s progress on stderr (docs/cli.md). On a terminal: per notebook a heading, then a
 * list with one line per code cell as it finishes (✓/✗, its time, an error's first line), and the
 * cell running now drawn live below it with its running time. With several notebooks at once
 * (`-j N`) each finished-cell line names its notebook and the live area has one line per running
 * notebook. Not a terminal: one plain line per finished cell, `a.ipynb [2/5] cell 3 ok 0.12s`,
 * always written whole. Other text (failures, notices) goes through print() so it lands above the
 * live lines, in one piece.
 */
import type { CellRunReport } from "../runtime/notebook-run.js";

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface RunProgressOptions {
  /** A terminal: the live list; otherwise plain lines. */
  tty: boolean;
  color: boolean;
  write: (text: string) => void;
  /** Several notebooks run at once: lines name their notebook, one live line per running one. */
  parallel?: boolean;
  /** The terminal's width: live lines are cut to fit, so redrawing them in place stays exact. */
  columns?: number;
}

interface Running {
  index: number;
  n: number;
  total: number;
  since: number;
}

export class RunProgress {
  /** The running cell of each notebook, in the order they started. */
  private readonly running = new Map<string, Running>();
  private liveLines = 0;
  private timer?: NodeJS.Timeout;
  private frame = 0;

  constructor(private readonly o: RunProgressOptions) {}

  /** A notebook starts: its heading (terminal only). */
  notebookStart(name: string, codeCells: number): void {
    if (this.o.tty) this.print(`${this.bold(name)} ${this.dim(`· ${codeCells} code cells`)}\n`);
  }

  cellStart(name: string, index: number, n: number, total: number): void {
    if (!this.o.tty) return;
    this.running.set(name, { index, n, total, since: performance.now() });
    this.timer ??= setInterval(() => this.redraw(), 100);
    this.timer.unref();
    this.redraw();
  }

  /** A cell ended: its line; `what` names an error (": ZeroDivisionError: …"). */
  cellEnd(name: string, n: number, total: number, report: CellRunReport, what: string): void {
    this.running.delete(name);
    const secs = (report.durationMs / 1000).toFixed(2);
    if (!this.o.tty) {
      this.print(`${name} [${n}/${total}] cell ${report.index} ${report.status} ${secs}s${what}\n`);
      return;
    }
    const mark =
      report.status === "ok"
        ? this.paint("32", "✓")
        : report.status === "error" && report.expectedError
          ? this.paint("33", "✗")
          : this.paint("31", "✗");
    const status = report.status === "ok" ? "" : ` ${report.status}`;
    const words = `${status}${what}`;
    const who = this.o.parallel ? `${name} ` : "";
    this.print(
      `  ${mark} ${who}${this.dim(`[${n}/${total}]`)} cell ${report.index} ${this.dim(`${secs}s`)}${report.status === "ok" ? "" : this.paint("31", words)}\n`,
    );
  }

  /** Text above the live lines (failures, notices, summaries), written in one piece. */
  print(text: string): void {
    this.o.write(`${this.clearLive()}${text}${this.live()}`);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.running.clear();
    const clear = this.clearLive();
    if (clear) this.o.write(clear);
  }

  private redraw(): void {
    const text = `${this.clearLive()}${this.live()}`;
    if (text) this.o.write(text);
  }

  /** The codes that erase the live lines drawn last (the cursor ends at the start of the first). */
  private clearLive(): string {
    if (this.liveLines === 0) return "";
    const up = "\x1b[1A\x1b[2K".repeat(this.liveLines - 1);
    this.liveLines = 0;
    return `\r\x1b[2K${up}`;
  }

  /** The live lines: the running cell, or with several notebooks one line per running notebook. */
  private live(): string {
    if (!this.o.tty || this.running.size === 0) return "";
    this.frame = (this.frame + 1) % SPINNER.length;
    const lines = [...this.running].map(([name, r]) => {
      const secs = ((performance.now() - r.since) / 1000).toFixed(1);
      const tail = `[${r.n}/${r.total}] cell ${r.index} running ${secs}s`;
      const who = this.o.parallel ? `${this.fit(name, tail.length + 5)} ` : "";
      return `  ${this.paint("36", SPINNER[this.frame])} ${who}${this.dim(`[${r.n}/${r.total}]`)} cell ${r.index} ${this.paint("36", `running ${secs}s`)}`;
    });
    this.liveLines = lines.length;
    return lines.join("\n");
  }

  /** A notebook name cut so that a live line of `rest` more characters fits the terminal. */
  private fit(name: string, rest: number): string {
    const room = (this.o.columns ?? 0) - 1 - rest;
    if (!this.o.columns || name.length <= room) return name;
    return room <= 1 ? "…" : `${name.slice(0, room - 1)}…`;
  }

  private paint(code: string, s: string): string {
    return this.o.color ? `\x1b[${code}m${s}\x1b[39m` : s;
  }

  private dim(s: string): string {
    return this.o.color ? `\x1b[2m${s}\x1b[22m` : s;
  }

  private bold(s: string): string {
    return this.o.color ? `\x1b[1m${s}\x1b[22m` : s;
  }
}
