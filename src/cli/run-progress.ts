/**
 * `nbagent run`'s progress on stderr (docs/cli.md). On a terminal: per notebook a heading, then a
 * list with one line per code cell as it finishes (✓/✗, its time, an error's first line), and the
 * cell running now drawn live below it with its running time. Not a terminal: one plain line per
 * finished cell, `a.ipynb [2/5] cell 3 ok 0.12s`. Other text (failures, notices) goes through
 * print() so it lands above the live line.
 */
import type { CellRunReport } from "../runtime/notebook-run.js";

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface RunProgressOptions {
  /** A terminal: the live list; otherwise plain lines. */
  tty: boolean;
  color: boolean;
  write: (text: string) => void;
}

export class RunProgress {
  private running?: { name: string; index: number; n: number; total: number; since: number };
  private liveDrawn = false;
  private timer?: NodeJS.Timeout;
  private frame = 0;

  constructor(private readonly o: RunProgressOptions) {}

  /** A notebook starts: its heading (terminal only). */
  notebookStart(name: string, codeCells: number): void {
    if (this.o.tty) this.print(`${this.bold(name)} ${this.dim(`· ${codeCells} code cells`)}\n`);
  }

  cellStart(name: string, index: number, n: number, total: number): void {
    if (!this.o.tty) return;
    this.running = { name, index, n, total, since: performance.now() };
    this.timer ??= setInterval(() => this.redraw(), 100);
    this.timer.unref();
    this.redraw();
  }

  /** A cell ended: its line; `what` names an error (": ZeroDivisionError: …"). */
  cellEnd(name: string, n: number, total: number, report: CellRunReport, what: string): void {
    this.running = undefined;
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
    this.print(
      `  ${mark} ${this.dim(`[${n}/${total}]`)} cell ${report.index} ${this.dim(`${secs}s`)}${report.status === "ok" ? "" : this.paint("31", words)}\n`,
    );
  }

  /** Text above the live line (failures, notices, summaries). */
  print(text: string): void {
    this.clearLive();
    this.o.write(text);
    this.drawLive();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.running = undefined;
    this.clearLive();
  }

  private redraw(): void {
    this.clearLive();
    this.drawLive();
  }

  private clearLive(): void {
    if (!this.liveDrawn) return;
    this.o.write("\r\x1b[2K");
    this.liveDrawn = false;
  }

  private drawLive(): void {
    const r = this.running;
    if (!this.o.tty || !r) return;
    this.frame = (this.frame + 1) % SPINNER.length;
    const secs = ((performance.now() - r.since) / 1000).toFixed(1);
    this.o.write(
      `  ${this.paint("36", SPINNER[this.frame])} ${this.dim(`[${r.n}/${r.total}]`)} cell ${r.index} ${this.paint("36", `running ${secs}s`)}`,
    );
    this.liveDrawn = true;
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
