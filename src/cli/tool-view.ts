/**
 * How the person-facing commands (`nbagent python`, `nbagent notebook`) show a tool call and its
 * result: the same result the model gets, drawn by the renderers (src/render/) on a terminal, or
 * as the model's own text when piped. While a call runs its output streams in, append-only: each
 * progress update prints the output lines it adds (on a terminal, in the view's `│ ` gutter); the
 * final view then prints what the stream has not shown (cell status, closing lines, images). When
 * an update no longer starts with what was printed (a clear_output, a cut), the rest of the stream
 * is not shown and the whole final view follows, under a rule. Rules: docs/cli.md.
 */
import type * as Renderers from "../render/index.js";
import type { RenderedTool } from "../render/index.js";
import { plainTheme, type RenderTheme, themeFromEnv } from "../render/theme.js";
import type { ToolEntry } from "../tools/index.js";
import type { ToolResult } from "../tools/types.js";
import { resultJson, resultText } from "./output.js";
import { interruptExitCode, withInterruptSignal } from "./posix-signals.js";

export interface ViewOptions {
  /** Terminal columns (default 80). */
  width: number;
  /** Show long parts whole instead of collapsed. */
  expanded: boolean;
  /** Drawn views on a terminal; the model's plain text when piped. */
  terminal: boolean;
  theme: RenderTheme;
  /** When the call started (for running times). */
  startedAt?: number;
}

// The renderers (highlight.js and the views, a large part of a short command's start-up), loaded
// only when a terminal shows the call: piped output is the model's own text.
let renderers: typeof Renderers | undefined;

function drawn(): typeof Renderers {
  if (!renderers) throw new Error("the renderers are loaded before a terminal view is made");
  return renderers;
}

/** The view options of this terminal (or pipe); a terminal's needs the renderers loaded first. */
async function loadViewOptions(expanded: boolean, stream: NodeJS.WriteStream): Promise<ViewOptions> {
  if (stream.isTTY === true) renderers ??= await import("../render/index.js");
  return viewOptions(expanded, stream);
}

/** The view options of this terminal (or pipe). */
function viewOptions(expanded: boolean, stream: NodeJS.WriteStream = process.stdout): ViewOptions {
  const terminal = stream.isTTY === true;
  return {
    width: stream.columns || 80,
    expanded,
    terminal,
    theme: terminal ? themeFromEnv(process.env) : plainTheme(),
  };
}

/** The lines that show a call before it runs (the code, the notebook action); none when piped. */
export function callView(tool: RenderedTool, args: unknown, o: ViewOptions): string[] {
  if (!o.terminal) return [];
  return drawn().renderToolCall(tool, args, { width: o.width, expanded: o.expanded, theme: o.theme });
}

/** The lines of a result (`partial`: a progress update of a call still running). */
export function resultView(
  tool: RenderedTool,
  result: ToolResult,
  o: ViewOptions,
  partial = false,
): string[] {
  if (!o.terminal) {
    const text = resultText(result);
    return text === "" ? [] : text.split("\n");
  }
  return drawn().renderToolResult(tool, result, {
    width: o.width,
    expanded: o.expanded,
    theme: o.theme,
    images: drawn().detectImageProtocol(process.env),
    startedAt: o.startedAt,
    partial,
  });
}

/**
 * The lines of a progress view that are streamed output: on a terminal, the gutter lines of the
 * output blocks (status lines change as cells run); piped, every line.
 */
export function outputLines(lines: string[], o: ViewOptions): string[] {
  if (!o.terminal) return lines;
  const gutter = o.theme.fg("border", "│ ");
  return lines.filter((l) => l.startsWith(gutter));
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** How a StreamView draws: the view of a result, and which of its lines are streamed output. */
export interface StreamDrawing {
  /** `whole`: long parts not collapsed (what streamed is shown whole). */
  view(result: ToolResult, partial: boolean, whole: boolean): string[];
  output(lines: string[]): string[];
}

/**
 * A call's view as it streams. `write` gets whole lines (each ending in "\n"). On a terminal (`live`)
 * the line still being written and a status line ("running 3s · Ctrl-C interrupts") are drawn below
 * the printed lines and redrawn in place; elsewhere only finished lines are printed.
 *
 * With `live.inPlace` (a call of several cells on a terminal) nothing is printed while it runs:
 * the whole progress view (its last rows, so that it fits the terminal) is redrawn in place above
 * the status line, so each cell's output stays under its own heading; the final view is printed
 * whole at the end.
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
  /** The progress view drawn in place (inPlace mode). */
  private progress: string[] = [];

  constructor(
    private readonly write: (text: string) => void,
    private readonly drawing: StreamDrawing,
    private readonly live:
      | { theme: RenderTheme; width: number; rows?: number; inPlace?: boolean }
      | undefined,
  ) {
    if (live) {
      this.timer = setInterval(() => this.redraw(), 100);
      this.timer.unref();
      this.redraw();
    }
  }

  /** A progress update: prints the finished output lines it adds. */
  update(partial: ToolResult): void {
    if (this.live?.inPlace) {
      this.progress = this.drawing.view(partial, true, false);
      this.redraw();
      return;
    }
    if (this.diverged) return;
    const lines = this.drawing.output(this.drawing.view(partial, true, true));
    // The last line may still grow (no newline yet): it is only drawn live, not printed.
    const finished = lines.slice(0, -1);
    if (!startsWith(finished, this.printed)) {
      this.diverged = true;
      this.pending = "";
      this.emit([this.dim("⋯ the output above was replaced (cleared or cut); the whole result follows")]);
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
    if (this.live?.inPlace) {
      this.emit(this.drawing.view(result, false, false));
      return;
    }
    const streamed = this.printed.length > 0 || this.diverged;
    const lines = this.drawing.view(result, false, streamed);
    const rest = this.diverged
      ? undefined
      : withoutSubsequence(lines, this.printed, (l) => this.drawing.output([l]).length === 1);
    if (!rest) {
      this.emit([this.dim("─".repeat(20)), ...lines]);
      return;
    }
    this.emit(rest);
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
    const status = this.live.theme.fg("accent", `${SPINNER[this.frame]} ${what} · ${secs}s`);
    // Each live line fits one row, so clearing knows how many rows to go up.
    const above = this.live.inPlace
      ? this.progress.slice(-Math.max(1, (this.live.rows ?? 24) - 2))
      : this.pending
        ? [this.pending]
        : [];
    const lines = [...above, status].map((l) => fit(l, this.live?.width));
    this.write(lines.join("\n"));
    this.liveLines = lines.length;
  }

  private dim(s: string): string {
    return this.live ? this.live.theme.fg("dim", s) : s;
  }
}

/**
 * `lines` without the lines of `taken`, matched in order; undefined when not all of them match.
 * The output lines right after the last one taken (the streamed output's end) come first, so the
 * output reads on where the stream stopped.
 */
function withoutSubsequence(
  lines: string[],
  taken: string[],
  isOutput: (line: string) => boolean,
): string[] | undefined {
  const before: string[] = [];
  const after: string[] = [];
  let k = 0;
  let lastAt = -1;
  lines.forEach((l, i) => {
    if (k < taken.length && l === taken[k]) {
      k++;
      lastAt = i;
    } else (lastAt >= 0 && k === taken.length ? after : before).push(l);
  });
  if (k < taken.length) return undefined;
  let n = 0;
  while (n < after.length && isOutput(after[n])) n++;
  return [...after.slice(0, n), ...before, ...after.slice(n)];
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
  { descriptor, tool }: ToolEntry,
  params: unknown,
  options: ShowOptions,
): Promise<ToolResult> {
  const out = options.out ?? process.stdout;
  if (options.json) {
    const result = await tool.execute(`cli-${process.pid}`, params, options.signal);
    out.write(`${resultJson(result)}\n`);
    return result;
  }
  const vo = { ...(await loadViewOptions(options.expanded, out)), startedAt: Date.now() };
  const view = new StreamView(
    (text) => out.write(text),
    {
      view: (result, partial, whole) =>
        resultView(descriptor, result, whole ? { ...vo, expanded: true } : vo, partial),
      output: (lines) => outputLines(lines, vo),
    },
    vo.terminal
      ? {
          theme: vo.theme,
          width: vo.width,
          rows: out.rows,
          inPlace: drawn().drawsInPlace(descriptor, params),
        }
      : undefined,
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

/**
 * One shown call as a command's whole work: SIGINT/SIGTERM interrupt it (the status line says so)
 * and give 130/143; otherwise 1 when the result is an error, else 0 (docs/cli.md).
 */
export async function runShownCall(
  tool: ToolEntry,
  params: unknown,
  options: { json: boolean; expanded: boolean },
): Promise<number> {
  let interrupted: number | undefined;
  const result = await withInterruptSignal((signal) =>
    executeShown(tool, params, {
      ...options,
      signal,
      onView: (view) =>
        signal.addEventListener("abort", () => {
          interrupted = interruptExitCode(signal);
          view.markInterrupted();
        }),
    }),
  );
  return interrupted ?? (result.isError ? 1 : 0);
}
