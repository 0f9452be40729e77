/**
 * The sidebar (docs/view.md "The page"): every host — its kind, pid, folder, since when — with its
 * sessions (idle or busy, the cell running now and for how long, memory, calls waiting, the run
 * holding it) and their buttons (interrupt, restart, export as notebook), and its background runs.
 * Drawn whole from the model (a few dozen elements), and only when what it shows changed: a button
 * is not replaced under a person's pointer while a cell prints. Which cell a busy session runs is
 * patched in place (a notebook run moves on to the next cell many times a second; redrawing the
 * whole sidebar for it cost the browser a layout and paint of all of it at each draw).
 */
import { bytesRough, pluralBare } from "../../sys/units.js";
import type { Action, Key, Session } from "./api.js";
import { button, el } from "./dom.js";
import { type CellRun, type Host, type HostsModel, keyId } from "./hosts-model.js";
import { clock, duration, hostTitle, keyTitle } from "./words.js";

export interface SidebarHandlers {
  selectHost(hostId: string): void;
  act(action: Action): void;
  /** The notebook of a session (a python session's, a notebook's file), when the page has it. */
  notebookOf(hostId: string, key: Key): string | undefined;
  showNotebook(path: string): void;
}

/** What the sidebar last drew, per container. */
const drawn = new WeakMap<HTMLElement, string>();

export function drawHosts(
  doc: Document,
  into: HTMLElement,
  model: HostsModel,
  selected: string | undefined,
  on: SidebarHandlers,
): void {
  const hosts = model.list();
  const shows = JSON.stringify([
    selected,
    hosts.map((h) => [
      h.info,
      h.runs,
      h.sessions.map((s) => [s, model.running(h, s.key) !== undefined, on.notebookOf(h.info.id, s.key)]),
    ]),
  ]);
  if (drawn.get(into) === shows) {
    patchRunning(into, hosts, model);
    return;
  }
  drawn.set(into, shows);
  if (hosts.length === 0) {
    into.replaceChildren(el(doc, "p", "nb-empty", "No nbagent process of yours is running on this machine."));
    return;
  }
  into.replaceChildren(...hosts.map((h) => drawHost(doc, h, model, h.info.id === selected, on)));
}

function drawHost(
  doc: Document,
  h: Host,
  model: HostsModel,
  current: boolean,
  on: SidebarHandlers,
): HTMLElement {
  const id = h.info.id;
  const title = button(doc, "nb-host-title", hostTitle(h.info), () => on.selectHost(id));
  title.title = "show this process's tool calls";
  const meta = el(doc, "div", "nb-host-meta", `${h.info.cwd} · since ${clock(h.info.startedAt)}`);
  meta.title = h.info.cwd;
  const section = el(doc, "section", `nb-host${current ? " nb-current" : ""}`, title, meta);
  section.dataset.hostId = id;
  const sessions = h.sessions.filter((s) => s.started || s.busy);
  if (sessions.length)
    section.append(el(doc, "ul", "nb-sessions", ...sessions.map((s) => drawSession(doc, h, s, model, on))));
  else section.append(el(doc, "div", "nb-host-meta", "no kernel yet"));
  const runs = h.runs.filter((r) => r.status === "running");
  if (runs.length)
    section.append(
      el(
        doc,
        "ul",
        "nb-runs",
        ...runs.map((r) => {
          const li = el(
            doc,
            "li",
            "nb-run",
            el(doc, "span", "nb-run-what", `run ${r.id} · ${r.what} · `),
            elapsed(doc, r.startedAt),
            button(doc, "nb-act nb-act-interrupt", "Interrupt", () =>
              on.act({ host: id, action: "interrupt", runId: r.id }),
            ),
          );
          li.dataset.runId = r.id;
          return li;
        }),
      ),
    );
  return section;
}

function drawSession(
  doc: Document,
  h: Host,
  s: Session,
  model: HostsModel,
  on: SidebarHandlers,
): HTMLElement {
  const host = h.info.id;
  const state = !s.alive ? "dead" : s.busy ? "busy" : "idle";
  const name = el(doc, "span", "nb-session-name", keyTitle(s.key));
  if (s.key.kind === "python") name.title = s.key.cwd;
  if (s.key.kind === "notebook") name.title = s.key.path;
  const head = el(
    doc,
    "div",
    "nb-session-head",
    el(doc, "span", `nb-badge nb-${state}`, state),
    name,
    s.memoryBytes !== undefined && el(doc, "span", "nb-session-mem", bytesRough(s.memoryBytes)),
  );
  const li = el(doc, "li", `nb-session nb-session-${state}`, head);
  li.dataset.key = keyId(s.key);
  const cell = model.running(h, s.key);
  if (cell && s.busy) {
    const running = el(doc, "div", "nb-running", "running ", el(doc, "code", "nb-running-code"), " for ");
    running.append(elapsed(doc, cell.startedAt));
    showRunning(running, cell);
    li.append(running);
  } else if (s.busy) li.append(el(doc, "div", "nb-running", "a call holds it"));
  const notes: string[] = [];
  if (s.waiting) notes.push(`${pluralBare(s.waiting, "call")} waiting`);
  if (s.runId) notes.push(`held by run ${s.runId}`);
  if (notes.length) li.append(el(doc, "div", "nb-session-notes", notes.join(" · ")));
  const actions = el(doc, "div", "nb-session-actions");
  const interrupt = button(doc, "nb-act nb-act-interrupt", "Interrupt", () =>
    on.act({ host, action: "interrupt", key: s.key }),
  );
  interrupt.disabled = !s.busy;
  interrupt.title = s.busy ? "stop the running cell (the agent's result says so)" : "nothing runs";
  const restart = button(doc, "nb-act nb-act-restart", "Restart", () => {
    if (
      doc.defaultView?.confirm(
        `Restart the kernel of ${keyTitle(s.key)}? Its state (variables, imports) is lost.`,
      )
    )
      on.act({ host, action: "restart", key: s.key });
  });
  restart.disabled = !s.alive;
  actions.append(interrupt, restart);
  if (s.key.kind === "python") {
    const exp = button(doc, "nb-act nb-act-export", "Export as notebook", () =>
      on.act({ host, action: "export", key: s.key }),
    );
    // Not while a cell runs: its cell is not in the notebook yet (and a host without the export
    // action takes any action on a session other than restart as an interrupt).
    exp.disabled = s.busy || !s.alive;
    exp.title = s.busy ? "wait for the running cell to end" : "download this session's cells as a .ipynb";
    actions.append(exp);
  }
  const nb = on.notebookOf(host, s.key);
  if (nb) actions.append(button(doc, "nb-act nb-act-show", "Show", () => on.showNotebook(nb)));
  li.append(actions);
  return li;
}

/** The cell a drawn `.nb-running` line shows (by its cellRun). */
const runningShown = new WeakMap<HTMLElement, number>();

/** Makes a session's "running … for …" line show `cell` (its first line of code, since when). */
function showRunning(running: HTMLElement, cell: CellRun): void {
  if (runningShown.get(running) === cell.cellRun) return;
  runningShown.set(running, cell.cellRun);
  const code = running.querySelector<HTMLElement>(".nb-running-code");
  const since = running.querySelector<HTMLElement>(".nb-elapsed");
  if (code) {
    code.textContent = cell.code.split("\n").find((l) => l.trim() !== "") ?? "";
    code.title = cell.code;
  }
  if (since) {
    since.dataset.since = String(cell.startedAt);
    since.textContent = duration(Date.now() - cell.startedAt);
  }
}

/** The sidebar as drawn, with each busy session's line brought to the cell it runs now. */
function patchRunning(into: HTMLElement, hosts: Host[], model: HostsModel): void {
  for (const h of hosts) {
    const section = into.querySelector<HTMLElement>(
      `:scope > section[data-host-id="${CSS.escape(h.info.id)}"]`,
    );
    if (!section) continue;
    for (const li of section.querySelectorAll<HTMLElement>(":scope > .nb-sessions > li")) {
      const running = li.querySelector<HTMLElement>(":scope > .nb-running");
      const s = h.sessions.find((x) => keyId(x.key) === li.dataset.key);
      const cell = s ? model.running(h, s.key) : undefined;
      if (running && cell && running.querySelector(".nb-running-code")) showRunning(running, cell);
    }
  }
}

/** A span the page's clock keeps up to date: how long since `since`. */
export function elapsed(doc: Document, since: number): HTMLElement {
  const span = el(doc, "span", "nb-elapsed", duration(Date.now() - since));
  span.dataset.since = String(since);
  return span;
}

/** Brings every elapsed time up to date (called each second). */
export function tick(doc: Document): void {
  const now = Date.now();
  for (const e of doc.querySelectorAll<HTMLElement>(".nb-elapsed[data-since]"))
    e.textContent = duration(now - Number(e.dataset.since));
}
