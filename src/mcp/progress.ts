/**
 * Turns a tool's partial results (onUpdate) into MCP progress notifications (docs/mcp.md):
 * `progress` rises with every notification and counts finished cells (`total` = the number of cells
 * when the partial's details list them), `message` names the cell being run and its last output line.
 * At most one notification per interval; the latest partial held back is sent when the interval ends.
 */

export interface ProgressValue {
  progress: number;
  total?: number;
  message?: string;
}

interface CellLike {
  status?: unknown;
  title?: unknown;
}

const FINAL = new Set(["ok", "error", "aborted", "skipped"]);
const MAX_LINE = 200;

/**
 * The last non-empty output line, or undefined when it is the running cell's `[i/n] title` header
 * (the python tool's; a notebook run's `[cell k (id …)]` is dropped by the tracker, which knows it).
 */
export function lastOutputLine(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((c) => c?.type === "text" && typeof c.text === "string");
  const text: string = texts.length ? texts[texts.length - 1].text : "";
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (!line || /^\[\d+\/\d+\]/.test(line)) {
      if (line) return undefined; // the running cell's header: it has no output yet
      continue;
    }
    return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line;
  }
  return undefined;
}

function cellsOf(details: unknown): CellLike[] | undefined {
  const cells = (details as { cells?: unknown } | undefined)?.cells;
  return Array.isArray(cells) && cells.length > 0 && cells.every((c) => typeof c?.status === "string")
    ? (cells as CellLike[])
    : undefined;
}

/** Builds the increasing progress values for one call. */
export class ProgressTracker {
  private finished = -1;
  private withinCell = 0;
  private seq = 0;

  next(partial: { content?: unknown; details?: unknown }): ProgressValue {
    let line = lastOutputLine(partial.content);
    const cells = cellsOf(partial.details);
    if (!cells) {
      this.seq++;
      return { progress: this.seq, message: line };
    }
    const done = cells.filter((c) => FINAL.has(String(c.status))).length;
    if (done > this.finished) {
      this.finished = done;
      this.withinCell = 0;
    } else this.withinCell++;
    // done + k/(k+1): strictly rising within a cell, below the next cell's done count
    const progress = this.finished + this.withinCell / (this.withinCell + 1);
    let pos = cells.findIndex((c) => c.status === "running");
    if (pos < 0) pos = Math.max(0, Math.min(cells.length - 1, done - 1));
    const title = typeof cells[pos].title === "string" ? (cells[pos].title as string) : "";
    if (title && line === `[${title}]`) line = undefined; // a notebook run's cell header: no output yet
    const head = `cell ${pos + 1}/${cells.length}${title ? ` · ${title}` : ""}`;
    return { progress, total: cells.length, message: line ? `${head}: ${line}` : head };
  }
}

/**
 * Sends at most one value per `intervalMs`: the first at once, later ones when the interval has
 * passed (the latest one waiting is sent then). `stop()` drops what is still waiting.
 */
export function throttle<T>(send: (value: T) => void, intervalMs: number) {
  let last = Number.NEGATIVE_INFINITY;
  let waiting: { value: T } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const flush = () => {
    timer = undefined;
    if (!waiting || stopped) return;
    const { value } = waiting;
    waiting = undefined;
    last = Date.now();
    send(value);
  };
  return {
    push(value: T) {
      if (stopped) return;
      waiting = { value };
      const wait = last + intervalMs - Date.now();
      if (wait <= 0) flush();
      else timer ??= setTimeout(flush, wait);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      waiting = undefined;
    },
  };
}
