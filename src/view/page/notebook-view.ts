/**
 * A notebook in the page: a scrolling element that holds only the cells near the viewport (a
 * 20,000-cell notebook keeps a few dozen cell elements), with spacers above and below standing for
 * the rest at their measured or estimated heights (heights.ts). A message changes the model
 * (../notebook-model.ts) and then only what the change touches: an edited cell is patched in place
 * (its untouched outputs kept, so their frames do not reload), an inserted, moved or deleted cell
 * adds, moves or drops that one element. Scrolled to the end, the view stays at the end as cells
 * and outputs arrive (following the agent's work live).
 */
import { type ModelCell, NotebookModel } from "../notebook-model.js";
import type { ViewMessage, ViewOutput } from "../protocol.js";
import { promptText, renderCell } from "./cell.js";
import { atNextDraw } from "./draw-tick.js";
import { releaseFrames } from "./frame.js";
import { Heights } from "./heights.js";
import { highlightHtml } from "./highlight.js";
import { renderMarkdown } from "./markdown.js";
import { renderOutput } from "./outputs.js";

/** Pixels drawn beyond each edge of the viewport. */
const OVERSCAN = 800;

function estimate(cell: ModelCell): number {
  const lines = cell.source.split("\n").length;
  return 24 + Math.min(lines, 200) * 18 + cell.outputs.length * 40;
}

/** Which output object each drawn output element shows (patching keeps the ones still there). */
const shown = new WeakMap<Element, ViewOutput>();
/** The source each drawn cell element shows. */
const shownSource = new WeakMap<Element, string>();

export class NotebookView {
  readonly model: NotebookModel;
  readonly element: HTMLElement;
  private readonly before: HTMLElement;
  private readonly list: HTMLElement;
  private readonly after: HTMLElement;
  private heights = new Heights([]);
  /** Drawn cell elements by cell id. */
  private drawn = new Map<string, HTMLElement>();
  private readonly resize: ResizeObserver;
  private atEnd = false;
  private frame = 0;
  private drawAsked = false;
  /** Cells changed since the last draw: patched, if drawn, when it draws. */
  private readonly dirty = new Set<string>();

  constructor(
    private readonly doc: Document,
    path: string,
  ) {
    this.model = new NotebookModel(path);
    this.element = doc.createElement("div");
    this.element.className = "nb-scroller";
    this.element.dataset.path = path;
    this.before = doc.createElement("div");
    this.list = doc.createElement("div");
    this.list.className = "nb-cells";
    this.after = doc.createElement("div");
    this.element.append(this.before, this.list, this.after);
    this.element.addEventListener("scroll", () => {
      this.atEnd = this.isAtEnd();
      this.schedule();
    });
    this.resize = new ResizeObserver((entries) => this.measured(entries));
  }

  private isAtEnd(): boolean {
    const e = this.element;
    return e.scrollHeight > e.clientHeight && e.scrollTop + e.clientHeight >= e.scrollHeight - 2;
  }

  /** Applies one message; returns why it could not be, when it could not. */
  apply(message: ViewMessage): string | undefined {
    const movedId = message.kind === "cell-moved" ? message.id : undefined;
    const change = this.model.apply(message);
    const cells = this.model.cells;
    switch (change.kind) {
      case "rejected":
        return change.reason;
      case "reset":
      case "closed":
        for (const el of this.drawn.values()) this.drop(el);
        this.drawn.clear();
        this.heights = new Heights(cells.map(estimate));
        break;
      case "inserted":
        this.heights.splice(change.index, 0, estimate(cells[change.index]));
        break;
      case "deleted":
        this.heights.splice(change.index, 1);
        break;
      case "moved": {
        const h = this.heights.get(change.from);
        this.heights.splice(change.from, 1);
        this.heights.splice(change.to, 0, h);
        // take the moved element out now: render() puts it at its new place, if that is in view,
        // without moving the others
        const el = movedId ? this.drawn.get(movedId) : undefined;
        if (el) el.remove();
        break;
      }
      case "changed": {
        // A cell not drawn is drawn from the model when it comes into view: nothing to draw now (a
        // run's cells below the view change many times a second, and each draw costs a frame).
        const id = cells[change.index].id;
        if (!this.drawn.has(id)) return undefined;
        this.dirty.add(id);
        break;
      }
    }
    // Drawn at the next draw (draw-tick.ts), with every message that came before it: a run's
    // hundreds of messages a second cost one patch per changed cell and one layout per draw.
    if (!this.drawAsked) {
      this.drawAsked = true;
      atNextDraw(() => {
        this.drawAsked = false;
        this.render();
      });
    }
    return undefined;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Draws the cells the viewport (and the overscan) shows, and sizes the spacers for the rest. */
  render(): void {
    // a notebook not shown draws nothing (its cells could not be measured); show() draws it
    const cells = this.model.cells;
    for (const id of this.dirty) {
      const el = this.drawn.get(id);
      const index = el ? this.model.indexOf(id) : -1;
      if (el && index >= 0) this.patch(el, cells[index]);
    }
    this.dirty.clear();
    if (!this.element.isConnected) {
      for (const el of this.drawn.values()) this.drop(el);
      this.drawn.clear();
      return;
    }
    const h = this.heights;
    const top = this.element.scrollTop;
    const view = this.element.clientHeight || 800;
    let first = 0;
    let last = -1;
    if (cells.length > 0) {
      first = h.indexAt(Math.max(0, top - OVERSCAN));
      last = h.indexAt(top + view + OVERSCAN);
    }
    const wanted = new Set<string>();
    for (let i = first; i <= last; i++) wanted.add(cells[i].id);
    for (const [id, el] of this.drawn)
      if (!wanted.has(id)) {
        this.drop(el);
        this.drawn.delete(id);
      }
    // walk the range in order: elements already in place stay, new ones go in where they belong
    let cursor = this.list.firstElementChild;
    for (let i = first; i <= last; i++) {
      const cell = cells[i];
      let el = this.drawn.get(cell.id);
      if (!el) el = this.draw(cell);
      if (el === cursor) cursor = cursor.nextElementSibling;
      else this.list.insertBefore(el, cursor);
    }
    this.before.style.height = `${h.offset(first)}px`;
    this.after.style.height = `${Math.max(0, h.total() - h.offset(last + 1))}px`;
    if (this.atEnd) this.element.scrollTop = this.element.scrollHeight;
  }

  private draw(cell: ModelCell): HTMLElement {
    const el = renderCell(this.doc, cell, this.model.language);
    shownSource.set(el, cell.source);
    const area = el.querySelector(":scope > .nb-outputs");
    if (area)
      Array.from(area.children).forEach((child, i) => {
        shown.set(child, cell.outputs[i]);
      });
    this.drawn.set(cell.id, el);
    this.resize.observe(el);
    return el;
  }

  private drop(el: HTMLElement): void {
    this.resize.unobserve(el);
    releaseFrames(el);
    el.remove();
  }

  /** Drawn cells took their real heights: the spacers follow, and the range is drawn again if it moved. */
  private measured(entries: ResizeObserverEntry[]): void {
    let changed = false;
    for (const entry of entries) {
      const el = entry.target as HTMLElement;
      const id = el.dataset.id;
      if (!id || this.drawn.get(id) !== el || !el.isConnected) continue;
      const index = this.model.indexOf(id);
      if (index < 0) continue;
      const height = el.offsetHeight;
      if (height !== this.heights.get(index)) {
        this.heights.set(index, height);
        changed = true;
      }
    }
    if (changed) this.schedule();
  }

  /** Redraws the parts of a drawn cell that changed: prompt, source, outputs past the ones kept. */
  private patch(el: HTMLElement, cell: ModelCell): void {
    if (!el.classList.contains(`nb-cell-${cell.cell_type}`)) {
      // another cell type: drawn anew, where the old one was (render() keeps it there)
      el.replaceWith(this.draw(cell));
      this.drop(el);
      return;
    }
    el.className = `nb-cell nb-cell-${cell.cell_type}`;
    if (cell.state !== "idle") el.classList.add(`nb-cell-${cell.state}`);
    el.dataset.version = String(cell.version);
    const prompt = el.querySelector(".nb-input > .nb-prompt");
    if (prompt && cell.cell_type === "code") {
      const text = promptText(cell);
      if (prompt.textContent !== text) prompt.textContent = text;
    }
    if (shownSource.get(el) !== cell.source) {
      const body = el.querySelector(".nb-input > .nb-source, .nb-input > .nb-markdown");
      if (body) {
        if (cell.cell_type === "markdown")
          body.replaceChildren(renderMarkdown(this.doc, cell.source, cell.attachments));
        else if (cell.cell_type === "code") body.innerHTML = highlightHtml(cell.source, this.model.language);
        else body.textContent = cell.source;
      }
      shownSource.set(el, cell.source);
    }
    if (cell.cell_type !== "code") return;
    let area = el.querySelector<HTMLElement>(":scope > .nb-outputs");
    if (!area) {
      if (cell.outputs.length === 0) return;
      area = this.doc.createElement("div");
      area.className = "nb-outputs";
      el.append(area);
    }
    // keep the leading outputs that are the same objects; redraw from the first that is not
    const children = Array.from(area.children);
    let keep = 0;
    while (
      keep < children.length &&
      keep < cell.outputs.length &&
      shown.get(children[keep]) === cell.outputs[keep]
    )
      keep++;
    for (const child of children.slice(keep)) {
      releaseFrames(child);
      child.remove();
    }
    for (const output of cell.outputs.slice(keep)) {
      const out = renderOutput(this.doc, output);
      shown.set(out, output);
      area.append(out);
    }
  }
}
