/**
 * How the person-facing commands (`nbagent python`, `nbagent notebook`) show a tool call and its
 * result: the same result the model gets, drawn by the renderers, streamed while it runs.
 * Streaming is append-only: each progress update prints the lines it adds to what is already on
 * screen; the final result then prints what the stream has not shown (notes, summary lines). When
 * an update no longer starts with what was printed (a clear_output, a cut), the rest of the stream
 * is not shown and the whole final view follows, under a rule. Rules: docs/cli.md.
 */
import type { AnyTool } from "../tools/index.js";
import type { ToolResult } from "../tools/types.js";
import { resultJson, resultText } from "./output.js";

export interface ViewOptions {
  /** Terminal columns (default 80). */
  width: number;
  /** Show long outputs whole instead of collapsed. */
  expanded: boolean;
  /** ANSI colours (a terminal, NO_COLOR unset). */
  color: boolean;
}

/** The lines that show a call before it runs (the code, the notebook action). */
export function callView(toolName: string, args: unknown, options: ViewOptions): string[] {
  void toolName;
  void args;
  void options;
  return [];
}

/** The lines of a result (`partial`: a progress update of a call still running). */
export function resultView(
  toolName: string,
  result: ToolResult,
  options: ViewOptions,
  partial = false,
): string[] {
  void toolName;
  void options;
  void partial;
  const text = resultText(result);
  return text === "" ? [] : text.split("\n");
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * A call's view as it streams. `write` gets whole lines (each ending in "\n"). On a terminal (`live`)
 * the line still being written and a status line ("running 3s · Ctrl-C interrupts") are drawn below
 * the printed lines and redrawn in place; elsewhere only finished lines are printed.
 */
export class StreamView {
  private printed: string[] = [];
  private diverged = false;
  private liveLines = 0;
  private pending = "";
  private timer?: NodeJS.Timeout;
  private frame = 0;
  private readonly started = Date.now();
  private interrupted = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly view: (result: ToolResult, partial: boolean) => string[],
    private readonly live: { color: boolean; width: number } | undefined,
  ) {
    if (live) {
      this.timer = setInterval(() => this.redraw(), 100);
      this.timer.unref();
      this.redraw();
    }
  }

  /** A progress update: prints the finished lines it adds. */
  update(partial: ToolResult): void {
    if (this.diverged) return;
    const lines = this.view(partial, true);
    // The last line may still grow (no newline yet): it is only drawn live, not printed.
    const finished = lines.slice(0, -1);
    if (!startsWith(finished, this.printed)) {
      this.diverged = true;
      this.emit([this.dim("⋯ the output above was replaced (cleared or cut); the whole result follows")]);
      this.pending = "";
      return;
    }
    this.emit(finished.slice(this.printed.length));
    this.printed = finished;
    this.pending = lines[lines.length - 1] ?? "";
    this.redraw();
  }

  /** The first Ctrl-C was taken: the status line says so. */
  markInterrupted(): void {
    this.interrupted = true;
    this.redraw();
  }

  /** The final result: prints what the stream has not shown. */
  finish(result: ToolResult): void {
    this.stop();
    const lines = this.view(result, false);
    const at = this.diverged ? -1 : indexOfBlock(lines, this.printed);
    if (at < 0) {
      if (this.printed.length) this.emit([this.dim("─".repeat(20))]);
      this.emit(lines);
      return;
    }
    this.emit([...lines.slice(0, at), ...lines.slice(at + this.printed.length)]);
  }

  /** Stops the live drawing (also when the call threw). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.clearLive();
  }

  private emit(lines: string[]): void {
    if (!lines.length) return;
    this.clearLive();
    this.write(lines.map((l) => `${l}\n`).join(""));
    this.drawLive();
  }

  private redraw(): void {
    if (!this.live || !this.timer) return;
    this.clearLive();
    this.drawLive();
  }

  private clearLive(): void {
    if (!this.liveLines) return;
    this.write(`\r\x1b[2K${"\x1b[1A\x1b[2K".repeat(this.liveLines - 1)}`);
    this.liveLines = 0;
  }

  private drawLive(): void {
    if (!this.live || !this.timer) return;
    const secs = Math.floor((Date.now() - this.started) / 1000);
    this.frame = (this.frame + 1) % SPINNER.length;
    const what = this.interrupted ? "interrupting… (Ctrl-C again exits)" : "running · Ctrl-C interrupts";
    const status = this.dim(`${SPINNER[this.frame]} ${what} · ${secs}s`);
    // Each live line fits one row, so clearing knows how many rows to go up.
    const lines = (this.pending ? [this.pending, status] : [status]).map((l) => fit(l, this.live?.width));
    this.write(lines.join("\n"));
    this.liveLines = lines.length;
  }

  private dim(s: string): string {
    return this.live?.color ? `\x1b[2m${s}\x1b[22m` : s;
  }
}

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/** A line cut to fit `width - 1` columns (escapes dropped when it is cut). */
function fit(line: string, width = 80): string {
  const plain = line.replace(ANSI, "");
  return plain.length < width ? line : `${plain.slice(0, Math.max(1, width - 2))}…`;
}

function startsWith(lines: string[], prefix: string[]): boolean {
  if (prefix.length > lines.length) return false;
  return prefix.every((l, i) => lines[i] === l);
}

/** Where `block` appears whole in `lines` (0 for an empty block), or -1. */
function indexOfBlock(lines: string[], block: string[]): number {
  if (!block.length) return 0;
  for (let i = 0; i + block.length <= lines.length; i++) {
    if (block.every((l, k) => lines[i + k] === l)) return i;
  }
  return -1;
}

/** The view options of this terminal (or pipe). */
export function viewOptions(expanded: boolean, stream: NodeJS.WriteStream = process.stdout): ViewOptions {
  return {
    width: stream.columns || 80,
    expanded,
    color: stream.isTTY === true && !process.env.NO_COLOR,
  };
}

export interface ShowOptions {
  /** Print the result as one JSON object at the end (no streaming). */
  json: boolean;
  expanded: boolean;
  signal: AbortSignal;
  /** Where the view goes (default stdout). */
  out?: NodeJS.WriteStream;
  /** Called with the stream view once it exists (to mark an interrupt on it). */
  onView?: (view: StreamView) => void;
}

/**
 * Runs one tool call and shows it: the streamed view on a terminal or pipe, or with `json` the one
 * result object. Returns the result (its isError decides the exit code).
 */
export async function executeShown(
  tool: AnyTool,
  params: unknown,
  options: ShowOptions,
): Promise<ToolResult> {
  const out = options.out ?? process.stdout;
  if (options.json) {
    const result = await tool.execute(`cli-${process.pid}`, params, options.signal);
    out.write(`${resultJson(result)}\n`);
    return result;
  }
  const vo = viewOptions(options.expanded, out);
  const view = new StreamView(
    (text) => out.write(text),
    (result, partial) => resultView(tool.name, result, vo, partial),
    out.isTTY ? { color: vo.color, width: vo.width } : undefined,
  );
  options.onView?.(view);
  try {
    const result = await tool.execute(`cli-${process.pid}`, params, options.signal, (partial: ToolResult) =>
      view.update(partial),
    );
    view.finish(result);
    return result;
  } finally {
    view.stop();
  }
}
