/**
 * The timeline of one host's tool calls (docs/view.md "The page"): each call's tool, when, its
 * parameters, the cells it ran (running now, or how they ended), and the texts the model received,
 * verbatim — whitespace kept, no markdown read into them — long ones folded to a few dozen lines but
 * all there, one click away. A call appears when it starts; its result when it ends. Only the calls a
 * change names are redrawn; a folded text a person opened stays open.
 */
import { pluralBare } from "../../sys/units.js";
import type { Call } from "./api.js";
import { button, el } from "./dom.js";
import type { CellRun, Host } from "./hosts-model.js";
import { elapsed } from "./sidebar.js";
import { clock, duration, hostTitle } from "./words.js";

/** Texts longer than this (lines or characters) are folded. */
const FOLD_LINES = 30;
const FOLD_CHARS = 4000;
/**
 * A call's cells shown until a person asks for all of them: the latest. A notebook run of hundreds
 * of cells is the notebook beside it; its entry here shows where the run is and how the last cells
 * ended (and drawing hundreds of code blocks at a call's end cost the browser ~50 ms a time).
 */
const SHOWN_CELLS = 20;

/** What a drawn cell of the timeline showed: redrawn only when this changes. */
function cellSignature(c: CellRun): string {
  return `${c.endedAt ?? ""}|${c.status ?? ""}|${c.tail?.length ?? 0}|${c.tail?.slice(-64) ?? ""}`;
}

export class Timeline {
  private readonly items = new Map<string, HTMLElement>();
  /** An open call's drawn cells (by cellRun) and what each showed: patched, not redrawn whole. */
  private readonly drawnCells = new Map<string, Map<number, { li: HTMLElement; signature: string }>>();
  private readonly list: HTMLOListElement;
  private readonly title: HTMLElement;
  /** Calls whose every cell a person asked to see. */
  private readonly allCells = new Set<string>();
  /** The host shown, as last given (a click on "show all" redraws its call from it). */
  private shown: Host | undefined;

  constructor(
    private readonly doc: Document,
    private readonly root: HTMLElement,
  ) {
    this.title = el(doc, "h2", "nb-timeline-title", "Tool calls");
    this.list = el(doc, "ol", "nb-calls");
    // The root scrolls from its end (page.css: a column-reverse flex box around one wrapper): at the
    // end it stays there as calls and cells arrive, with no scroll of the page's own — a scroll at
    // each draw cost the browser a second frame (its scroll events, a hover test) per draw.
    root.replaceChildren(el(doc, "div", "nb-timeline-inner", this.title, this.list));
  }

  get host(): string | undefined {
    return this.shown?.info.id;
  }

  /** Shows a host's calls (all of them: a new host, or none). */
  show(h: Host | undefined): void {
    this.shown = h;
    this.items.clear();
    this.drawnCells.clear();
    this.title.textContent = h ? `Tool calls · ${hostTitle(h.info)}` : "Tool calls";
    this.root.dataset.hostId = h?.info.id ?? "";
    if (!h) {
      this.list.replaceChildren(el(this.doc, "li", "nb-empty", "Choose a process on the left."));
      return;
    }
    this.list.replaceChildren();
    if (h.calls.length === 0) this.list.append(el(this.doc, "li", "nb-empty", "No tool call yet."));
    for (const c of h.calls) this.update(h, c.callId);
    // The latest call is what a person came for: the end (0, the root scrolls from its end).
    this.root.scrollTop = 0;
  }

  /** Redraws the calls a change named (a new one is added at the end; one the host forgot goes). */
  changed(h: Host, callIds: string[] | undefined): void {
    if (h.info.id !== this.host) return;
    this.shown = h;
    if (!callIds) {
      this.show(h);
      return;
    }
    for (const id of callIds) this.update(h, id);
    const kept = new Set(h.calls.map((c) => c.callId));
    for (const [id, e] of this.items)
      if (!kept.has(id)) {
        e.remove();
        this.items.delete(id);
        this.drawnCells.delete(id);
        this.allCells.delete(id);
      }
  }

  private update(h: Host, callId: string): void {
    const call = h.calls.find((c) => c.callId === callId);
    if (!call) return;
    const old = this.items.get(callId);
    const cells = h.cells.filter((c) => c.callId === callId);
    // A call still running: only its cells that changed are drawn again (a run of hundreds of cells
    // would otherwise be rebuilt whole at every frame it prints in).
    if (old && !call.ended && old.classList.contains("nb-call-open")) {
      this.patchCells(old, callId, cells);
      return;
    }
    const opened = new Set<number>();
    if (old)
      old.querySelectorAll<HTMLElement>(".nb-result-text.nb-unfolded").forEach((e) => {
        opened.add(Number(e.dataset.index));
      });
    this.drawnCells.delete(callId);
    const fresh = this.drawCall(call, cells, opened);
    if (!call.ended) this.patchCells(fresh, callId, cells);
    if (old) old.replaceWith(fresh);
    else {
      this.list.querySelector(":scope > .nb-empty")?.remove();
      this.list.append(fresh);
    }
    this.items.set(callId, fresh);
    // Scrolled to the end, the timeline stays there as calls start and end (a person follows the
    // agent): the root scrolls from its end, so the browser keeps it there itself.
  }

  private drawCall(call: Call, cells: CellRun[], opened: Set<number>): HTMLElement {
    const d = this.doc;
    const end = call.ended;
    const state = end
      ? el(d, "span", "nb-call-state", `${duration(end.durationMs)}${end.isError ? " · error" : ""}`)
      : el(d, "span", "nb-call-state", "running · ", elapsed(d, call.startedAt));
    const head = el(
      d,
      "div",
      "nb-call-head",
      el(d, "span", "nb-call-tool", call.tool),
      el(d, "span", "nb-call-time", clock(call.startedAt)),
      state,
    );
    const params = JSON.stringify(call.params, null, 2) ?? "";
    const paramsBox = el(
      d,
      "details",
      "nb-call-params",
      el(d, "summary", undefined, `parameters · ${oneLine(JSON.stringify(call.params) ?? "")}`),
      el(d, "pre", "nb-verbatim", params),
    );
    const item = el(
      d,
      "li",
      `nb-call${end ? "" : " nb-call-open"}${end?.isError ? " nb-call-error" : ""}`,
      head,
      paramsBox,
    );
    item.dataset.callId = call.callId;
    // An open call's cells are drawn by patchCells.
    if (cells.length && end) {
      const shown = this.shownCells(call.callId, cells);
      const more = this.moreLine(call.callId, cells.length, shown.length);
      item.append(el(d, "ol", "nb-tl-cells", ...(more ? [more] : []), ...shown.map((c) => this.drawCell(c))));
    }
    if (end) {
      const result = el(d, "div", "nb-call-result", el(d, "div", "nb-result-label", "the model read:"));
      end.texts.forEach((t, i) => {
        result.append(this.verbatim(t, i, opened.has(i)));
      });
      if (end.texts.length === 0) result.append(el(d, "div", "nb-result-none", "(no text)"));
      if (end.images)
        result.append(el(d, "div", "nb-result-images", `and ${pluralBare(end.images, "image")}`));
      item.append(result);
    }
    return item;
  }

  /** The cells of a call to draw: the latest SHOWN_CELLS, or all once a person asked. */
  private shownCells(callId: string, cells: CellRun[]): CellRun[] {
    return this.allCells.has(callId) ? cells : cells.slice(-SHOWN_CELLS);
  }

  /**
   * The line above a call's cells that says how many earlier ones are not drawn, with the button
   * that draws them (or folds them again); none when every cell fits.
   */
  private moreLine(callId: string, total: number, shown: number): HTMLElement | undefined {
    const d = this.doc;
    const all = this.allCells.has(callId);
    if (total <= SHOWN_CELLS) return undefined;
    const toggle = button(
      d,
      "nb-unfold nb-tl-all",
      all ? "fold" : `show all ${pluralBare(total, "cell")}`,
      () => {
        if (this.allCells.has(callId)) this.allCells.delete(callId);
        else this.allCells.add(callId);
        // Drawn again whole, in order (an open call's patching only appends at the end).
        this.drawnCells.delete(callId);
        this.items.get(callId)?.querySelector(":scope > .nb-tl-cells")?.remove();
        if (this.shown) this.update(this.shown, callId);
      },
    );
    const said = all
      ? `all ${pluralBare(total, "cell")}`
      : `${pluralBare(total - shown, "earlier cell")} not shown`;
    const li = el(d, "li", "nb-tl-more", `${said} · `, toggle);
    li.dataset.total = String(total);
    li.dataset.all = String(all);
    return li;
  }

  /** Brings an open call's cell list up to `cells`: new ones appended, changed ones redrawn, gone ones out. */
  private patchCells(item: HTMLElement, callId: string, all: CellRun[]): void {
    const cells = this.shownCells(callId, all);
    let drawn = this.drawnCells.get(callId);
    if (!drawn) {
      drawn = new Map();
      this.drawnCells.set(callId, drawn);
    }
    let list = item.querySelector<HTMLElement>(":scope > .nb-tl-cells");
    if (!list && cells.length) {
      list = el(this.doc, "ol", "nb-tl-cells");
      item.append(list);
    }
    const keep = new Set<number>();
    for (const c of cells) {
      keep.add(c.cellRun);
      const signature = cellSignature(c);
      const had = drawn.get(c.cellRun);
      if (had?.signature === signature) continue;
      const li = this.drawCell(c);
      if (had) had.li.replaceWith(li);
      else list?.append(li);
      drawn.set(c.cellRun, { li, signature });
    }
    for (const [run, { li }] of drawn)
      if (!keep.has(run)) {
        li.remove();
        drawn.delete(run);
      }
    // The line above the cells, as the counts are now (the button's state kept).
    const had = list?.querySelector<HTMLElement>(":scope > .nb-tl-more");
    const allNow = String(this.allCells.has(callId));
    if (had && had.dataset.total === String(all.length) && had.dataset.all === allNow) return;
    const more = this.moreLine(callId, all.length, cells.length);
    if (had && more) had.replaceWith(more);
    else if (had) had.remove();
    else if (more) list?.prepend(more);
  }

  private drawCell(c: CellRun): HTMLElement {
    const d = this.doc;
    const state =
      c.endedAt === undefined
        ? el(d, "span", "nb-tl-state", "running · ", elapsed(d, c.startedAt))
        : el(
            d,
            "span",
            "nb-tl-state",
            `${c.status === "gone" ? "ended" : c.status} · ${duration(c.endedAt - c.startedAt)}`,
          );
    const li = el(
      d,
      "li",
      `nb-tl-cell nb-tl-cell-${c.endedAt === undefined ? "running" : c.status}`,
      state,
      el(d, "pre", "nb-verbatim nb-tl-code", c.code),
    );
    if (c.endedAt === undefined && c.tail)
      li.append(el(d, "pre", "nb-verbatim nb-tl-tail", lastLines(c.tail, 6)));
    li.dataset.cellRun = String(c.cellRun);
    return li;
  }

  /** One text as the model read it: whole in the page, folded when long, opened on demand. */
  private verbatim(text: string, index: number, open: boolean): HTMLElement {
    const d = this.doc;
    const pre = el(d, "pre", "nb-verbatim nb-result-text", text);
    pre.dataset.index = String(index);
    const lines = text.split("\n").length;
    if (lines <= FOLD_LINES && text.length <= FOLD_CHARS) return pre;
    pre.classList.add("nb-folded");
    if (open) pre.classList.add("nb-unfolded");
    const label = () =>
      pre.classList.contains("nb-unfolded")
        ? "fold"
        : `show all ${pluralBare(lines, "line")} (${text.length.toLocaleString("en")} characters)`;
    const toggle: HTMLButtonElement = button(d, "nb-unfold", label(), () => {
      pre.classList.toggle("nb-unfolded");
      toggle.textContent = label();
    });
    return el(d, "div", "nb-result-fold", pre, toggle);
  }
}

function oneLine(s: string): string {
  return s.length > 120 ? `${s.slice(0, 119)}…` : s;
}

function lastLines(s: string, n: number): string {
  const lines = s.replace(/\n$/, "").split("\n");
  return lines.slice(-n).join("\n");
}
