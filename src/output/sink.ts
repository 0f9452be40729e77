/**
 * OutputSink (docs/output.md): one call's output, cell by cell. Each cell keeps a bounded view
 * of its own output (CellView); `dump` shares the text budget between the cells (tracebacks first,
 * then cells that fit keep all, the rest split what is left) and says what each shows. Every byte,
 * with the cell headers and a marker where output was cleared, goes to one artifact for the whole
 * call, written to its file as soon as the model's view cuts anything.
 */
import { type ArtifactIncomplete, ArtifactLog, type SinkArtifact } from "./artifact-log.js";
import { allocate } from "./budget.js";
import { type CellRender, CellView, type ChunkKind, MAX_DISPLAY_SLOTS } from "./cell-view.js";
import { CALL_OUTPUT_BYTES } from "./model-budgets.js";

export type { ArtifactIncomplete, SinkArtifact } from "./artifact-log.js";
export type { ChunkKind } from "./cell-view.js";
export { MAX_DISPLAY_SLOTS };

/** What the notice and gap markers of one cut cell take, about (kept out of the budget). */
export const DEFAULT_CUT_OVERHEAD = 384;
/** The artifact's line where a cell's output was cleared (clear_output). */
export const DEFAULT_CLEAR_MARKER = "[output cleared]";
/** The artifact's line before the new state of an updated display (update_display_data). */
export const DEFAULT_UPDATE_MARKER = "[display updated]";

/**
 * What an update of a display id found in this call: its displays `replaced` in place, `gone` (shown
 * in this call but cleared since: nothing shows it), `unknown` (not shown in this call), or
 * `untracked` (not among the displays this call still places: it showed more displays with ids than
 * it keeps places for, so the display may be of this call or an earlier one).
 */
export type DisplayUpdate = "replaced" | "gone" | "unknown" | "untracked";

export interface OutputSinkOptions {
  /** Bytes of output text shown to the model for the whole call (default CALL_OUTPUT_BYTES: 50 KiB). */
  maxBytes?: number;
  /** Where the whole output goes once anything is cut (created lazily). */
  artifact?: SinkArtifact;
  clearMarker?: string;
  updateMarker?: string;
  /** Bytes kept out of the budget per cut cell, for the notice and markers that say so (default 384). */
  cutOverhead?: number;
}

export interface CellDump extends CellRender {
  /** The header line written before the cell's output (none for a lone cell). */
  header?: string;
  /** Bytes of the budget this cell was given. */
  share: number;
}

export interface OutputDump {
  cells: CellDump[];
  /** Some cell's view was cut (a line left out or cut). */
  truncated: boolean;
  /** Lines and bytes of the call's whole text: everything printed, headers and clear markers included. */
  totalLines: number;
  totalBytes: number;
  /** Set when the whole text is in an artifact (whenever something was cut). */
  artifactId?: string;
  /** Set when writing the artifact failed (it is then missing or incomplete). */
  artifactError?: string;
  /**
   * Set when the artifact exists but holds only the start of the output (`artifactId` is set): the
   * bytes and lines it kept and why the rest is not there.
   */
  artifactIncomplete?: ArtifactIncomplete;
}

interface SinkCell {
  view: CellView;
  header?: string;
}

export class OutputSink {
  readonly maxBytes: number;
  private readonly log: ArtifactLog;
  private readonly cells: SinkCell[] = [];
  private readonly clearMarker: string;
  private readonly updateMarker: string;
  private readonly cutOverhead: number;
  /** Display id → the cells (their views) that showed a display with it in this call. */
  private readonly displays = new Map<string, Set<CellView>>();
  private ended = false;

  constructor(options: OutputSinkOptions = {}) {
    this.maxBytes = options.maxBytes ?? CALL_OUTPUT_BYTES;
    this.clearMarker = options.clearMarker ?? DEFAULT_CLEAR_MARKER;
    this.updateMarker = options.updateMarker ?? DEFAULT_UPDATE_MARKER;
    this.cutOverhead = options.cutOverhead ?? DEFAULT_CUT_OVERHEAD;
    this.log = new ArtifactLog(options.artifact, this.maxBytes);
  }

  /** A new cell starts (the previous one ends); `header` goes to the artifact before its output. */
  startCell(header?: string): void {
    if (this.ended) return;
    this.endCell();
    this.compact();
    if (header !== undefined) {
      if (!this.log.atLineStart) this.log.write("\n");
      this.log.write(`${header}\n`);
    }
    this.cells.push({ view: new CellView(this.log, this.maxBytes), header });
  }

  /** Display ids were forgotten past MAX_DISPLAY_SLOTS: an unknown id may be of this call. */
  private forgotDisplays = false;

  /**
   * Adds raw output of the current cell (ANSI codes and `\r` are handled here). A display with a
   * `displayId` can be replaced later by `updateDisplay`.
   */
  push(text: string, kind: ChunkKind = "stdout", displayId?: string): void {
    if (this.ended) return;
    if (this.cells.length === 0) this.startCell();
    const view = this.cells[this.cells.length - 1].view;
    view.push(text, kind, displayId);
    if (displayId === undefined || kind !== "display") return;
    const views = this.displays.get(displayId);
    if (views) views.add(view);
    else this.displays.set(displayId, new Set([view]));
    if (this.displays.size > MAX_DISPLAY_SLOTS) {
      this.displays.delete(this.displays.keys().next().value!);
      this.forgotDisplays = true;
    }
  }

  /**
   * A chunk of the current cell whose whole text goes to the artifact while the view shows a shorter
   * form (a traceback with its library frames folded): `shorter` gets the artifact's id and the lines
   * the whole text took there, and the artifact is kept. False (nothing taken) when the artifact
   * cannot be written: the caller pushes the whole text instead.
   */
  pushAside(
    full: string,
    shorter: (at: { id: string; first: number; last: number }) => string,
    kind: ChunkKind = "error",
  ): boolean {
    if (this.ended) return false;
    if (this.cells.length === 0) this.startCell();
    this.log.open();
    const id = this.log.id;
    if (!id || this.log.failure) return false;
    this.keepArtifact = true;
    const view = this.cells[this.cells.length - 1].view;
    view.pushAside(full, (first, last) => shorter({ id, first, last }), kind);
    return true;
  }

  /** Something in the view points into the artifact (pushAside): it is kept when the call ends. */
  private keepArtifact = false;

  /**
   * update_display_data: every display of this call with `displayId` shows `text` instead, where it
   * was shown (docs/output.md); the artifact gets the new state after a marker line, where the
   * update arrived.
   */
  updateDisplay(displayId: string, text: string): DisplayUpdate {
    const views = this.displays.get(displayId);
    const forgot = this.forgotDisplays || this.cells.some((c) => c.view.forgotSlots);
    if (this.ended || !views) return forgot ? "untracked" : "unknown";
    let replaced = false;
    for (const view of views) if (view.replaceDisplay(displayId, text)) replaced = true;
    if (!replaced) return [...views].some((v) => v.forgotSlots) ? "untracked" : "gone";
    this.cells[this.cells.length - 1].view.logUpdate(this.updateMarker, text);
    return "replaced";
  }

  /** clear_output for the current cell: what it showed leaves the view (the artifact keeps it). */
  clear(): void {
    if (this.ended || this.cells.length === 0) return;
    this.cells[this.cells.length - 1].view.clear(this.clearMarker);
  }

  /** Ends the current cell (its partial last line becomes a line). */
  endCell(): void {
    if (!this.ended) this.cells[this.cells.length - 1]?.view.settle();
  }

  /** Finished cells drop what their current share can no longer show (bounded memory for many cells). */
  private compact(): void {
    if (this.cells.length === 0) return;
    const { shares, reserved } = this.allocation();
    for (const [i, c] of this.cells.entries()) c.view.compact(shares[i], reserved[i]);
  }

  /**
   * The shares: the budget less the cell headers and, per cut cell, `cutOverhead` for the words
   * that say so (never less than half the budget), so the whole text stays near `maxBytes`.
   */
  private allocation() {
    const sizes = this.cells.map((c) => c.view.size());
    const needs = sizes.map((s) => s.bytes);
    const important = sizes.map((s) => s.important);
    let headers = 0;
    for (const c of this.cells) if (c.header !== undefined) headers += Buffer.byteLength(c.header) + 1;
    const least = Math.floor(this.maxBytes / 2);
    const budget = Math.max(least, this.maxBytes - headers);
    const first = allocate(budget, needs, important);
    const cut = first.shares.filter((share, i) => share < needs[i]).length;
    if (cut === 0 || this.cutOverhead === 0) return first;
    return allocate(Math.max(least, budget - cut * this.cutOverhead), needs, important);
  }

  /** What the model sees so far (callable mid-stream for progress). */
  dump(): OutputDump {
    const { shares, reserved } = this.allocation();
    const cells = this.cells.map((c, i) => ({
      ...c.view.render(shares[i], reserved[i]),
      header: c.header,
      share: shares[i],
    }));
    const truncated = cells.some((c) => c.cut);
    if (truncated || this.keepArtifact) this.log.open();
    return {
      cells,
      truncated,
      totalLines: this.log.totalLines,
      totalBytes: this.log.totalBytes,
      artifactId: this.log.id,
      artifactError: this.log.failure,
      artifactIncomplete: this.log.incomplete,
    };
  }

  /** Ends the stream and closes the artifact (removed when nothing was cut). Idempotent. */
  end(): OutputDump {
    this.endCell();
    this.ended = true;
    const dump = this.dump();
    this.log.close(dump.truncated || this.keepArtifact);
    return {
      ...dump,
      artifactId: this.log.id,
      artifactError: this.log.failure,
      artifactIncomplete: this.log.incomplete,
    };
  }
}
