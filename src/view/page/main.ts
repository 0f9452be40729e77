/**
 * The view page's entry (bundled to page.js; docs/view.md "The page"). Reads the server's stream (an
 * EventSource at the body's `data-events`, `api/events`): first a `state` event (every host, and
 * the notebooks), then the hub's messages — one per event, or (`?batch=1`, as index.html asks) one
 * `batch` event per server write, their JSON array — a host came or went, a host's snapshot, event,
 * sessions or runs, or a notebook message (../protocol.ts). Keeps the hosts in a HostsModel and one
 * NotebookView per notebook; draws the sidebar (hosts, sessions, notebooks), the chosen notebook
 * and the chosen host's call timeline; sends the person's actions (./actions.ts) and says the
 * host's answer as it is. A message that does not fit is shown in the status line, never guessed
 * at. Body's `data-applied` counts the messages taken and drawn (written at the frame that draws
 * them; tests wait on it).
 */
import { checkViewMessage, type ViewMessage } from "../protocol.js";
import { act, download } from "./actions.js";
import type { Action, HubMessage, Key, State } from "./api.js";
import { button, el } from "./dom.js";
import { atNextSummaryDraw, summaryDrawSoon, whenDrawn } from "./draw-tick.js";
import { HostsModel, keyId } from "./hosts-model.js";
import { NotebookView } from "./notebook-view.js";
import { drawHosts, tick } from "./sidebar.js";
import { Timeline } from "./timeline.js";
import { actionTitle, answerText } from "./words.js";

const doc = document;
const views = new Map<string, NotebookView>();
/** A notebook's title and the session it records, from its snapshot. */
const about = new Map<
  string,
  { title?: string; session?: { hostId: string; key: Record<string, unknown> } }
>();
const model = new HostsModel();
let current: string | undefined;
let applied = 0;
let actions = 0;

const nav = doc.getElementById("nb-list")!;
const hostsBox = doc.getElementById("nb-hosts")!;
const main = doc.getElementById("nb-main")!;
const status = doc.getElementById("nb-status")!;
const answer = doc.getElementById("nb-answer")!;
const timeline = new Timeline(doc, doc.getElementById("nb-timeline")!);

function say(text: string, problem = false): void {
  status.textContent = text;
  status.classList.toggle("nb-problem", problem);
}

function show(path: string): void {
  const view = views.get(path);
  if (!view) return;
  current = path;
  main.replaceChildren(view.element);
  view.render();
  for (const b of nav.querySelectorAll<HTMLButtonElement>("button"))
    b.classList.toggle("nb-current", b.dataset.path === path);
}

function titleOf(path: string): string {
  const a = about.get(path);
  if (a?.title) {
    const host = a.session ? model.hosts.get(a.session.hostId) : undefined;
    return host ? `${a.title} (pid ${host.info.pid})` : a.title;
  }
  return path;
}

function listNotebooks(): void {
  nav.replaceChildren(
    ...[...views.keys()].map((path) => {
      const b = button(doc, path === current ? "nb-current" : "", titleOf(path), () => show(path));
      b.dataset.path = path;
      b.title = path;
      return b;
    }),
  );
}

/** What the middle says while it has no notebook to show. */
function noNotebook(): void {
  main.replaceChildren(
    el(
      doc,
      "p",
      "nb-empty nb-main-empty",
      "No notebook yet: the notebooks the agents edit and run, and their python sessions' cells, show here.",
    ),
  );
}

function forget(path: string): void {
  views.delete(path);
  about.delete(path);
  if (current === path) {
    current = undefined;
    noNotebook();
    const next = views.keys().next();
    if (!next.done) show(next.value);
  }
}

function handleNotebook(message: ViewMessage): void {
  let view = views.get(message.path);
  if (message.kind === "notebook-closed") {
    forget(message.path);
    listNotebooks();
    return;
  }
  if (!view) {
    if (message.kind !== "notebook") {
      say(`Out of step: ${message.kind} for ${message.path}, which the page has not been sent`, true);
      return;
    }
    view = new NotebookView(doc, message.path);
    views.set(message.path, view);
  }
  if (message.kind === "notebook")
    about.set(message.path, { title: message.title, session: message.session });
  const problem = view.apply(message);
  if (problem) say(`Out of step with the server: ${message.kind} in ${message.path}: ${problem}`, true);
  if (message.kind === "notebook") listNotebooks();
  if (current === undefined) show(message.path);
}

/** The notebook the page has for a session: a python session's own, or the notebook file a kernel runs. */
function notebookOf(hostId: string, key: Key): string | undefined {
  if (key.kind === "notebook" && views.has(key.path)) return key.path;
  const id = keyId(key);
  for (const [path, a] of about)
    if (a.session?.hostId === hostId && keyId(a.session.key as Key) === id) return path;
  return undefined;
}

let selected: string | undefined;

function selectHost(hostId: string | undefined): void {
  selected = hostId;
  timeline.show(hostId ? model.hosts.get(hostId) : undefined);
  drawSidebar();
}

/** The chosen host, or (none chosen, or it ended) the newest one. */
function ensureSelection(): void {
  if (selected && model.hosts.has(selected)) return;
  selectHost(model.list().at(-1)?.info.id);
}

let drawQueued = false;
function drawSidebar(): void {
  drawHosts(doc, hostsBox, model, selected, {
    selectHost,
    act: (a) => void perform(a),
    notebookOf,
    showNotebook: show,
  });
}
/** Redraws the sidebar once per summary draw at most (draw-tick.ts), however many messages came. */
function drawSidebarSoon(): void {
  if (drawQueued) return;
  drawQueued = true;
  atNextSummaryDraw(() => {
    drawQueued = false;
    drawSidebar();
  });
}

/** Calls of the shown host to redraw at the next summary draw (draw-tick.ts): a run of cells redraws its call a few times a second. */
const callsToRedraw = new Set<string>();
function redrawCallsSoon(ids: string[]): void {
  const first = callsToRedraw.size === 0;
  for (const id of ids) callsToRedraw.add(id);
  if (!first) return;
  atNextSummaryDraw(() => {
    const h = timeline.host ? model.hosts.get(timeline.host) : undefined;
    const ids = [...callsToRedraw];
    callsToRedraw.clear();
    if (h) timeline.changed(h, ids);
  });
}

/**
 * The news of a run's every cell: drawn in the sidebar and the timeline at the summary's pace (once
 * a second while it comes fast); the rest — a call started or ended, a session busy or idle, a run,
 * a process — at the next draw (draw-tick.ts).
 */
const CELL_NEWS = new Set(["cell-started", "cell-output", "cell-ended", "cells-queued"]);
function drawnSoon(m: HubMessage): boolean {
  return !(m.type === "event" && CELL_NEWS.has(m.event.type));
}

async function perform(a: Action): Promise<void> {
  const host = model.hosts.get(a.host)?.info;
  const what = actionTitle(a, host);
  const n = ++actions;
  answer.textContent = `${what}: sent…`;
  answer.className = "";
  answer.dataset.actions = String(n - 1);
  const got = await act(a);
  let text: string;
  if ("error" in got) text = got.error;
  else if (got.result.kind === "exported" && !("runId" in a)) {
    const file = `${a.key.kind === "python" ? a.key.sessionId : "session"}.ipynb`;
    download(doc, got.result.notebook, file);
    text = answerText(got.result, file);
  } else text = answerText(got.result);
  const ok = !("error" in got) && ["interrupted", "restarted", "exported"].includes(got.result.kind);
  answer.textContent = `${what}: ${text}`;
  answer.className = ok ? "nb-done" : "nb-problem";
  answer.dataset.actions = String(n);
}

function reset(state: State): void {
  model.reset(state);
  for (const path of [...views.keys()]) forget(path);
  for (const m of Array.isArray(state.notebooks) ? state.notebooks : []) {
    const checked = checkViewMessage(m);
    if ("error" in checked) say(`The server sent a notebook the page cannot use: ${checked.error}`, true);
    else handleNotebook(checked.message);
  }
  listNotebooks();
  selected = selected && model.hosts.has(selected) ? selected : undefined;
  if (selected) selectHost(selected);
  else ensureSelection();
  drawSidebar();
}

function handle(m: HubMessage): void {
  if (m.type === "notebook") {
    const checked = checkViewMessage(m.message);
    if ("error" in checked) say(`The server sent a message the page cannot use: ${checked.error}`, true);
    else handleNotebook(checked.message);
    return;
  }
  const change = model.apply(m);
  if (change.what === "nothing") return;
  if (change.what === "hosts") {
    ensureSelection();
    if (selected && m.type === "snapshot" && m.hostId === selected) timeline.show(model.hosts.get(selected));
    listNotebooks();
  } else if (change.what === "host") {
    if (m.type === "snapshot") {
      const h = model.hosts.get(change.hostId);
      if (h) timeline.changed(h, undefined);
    } else if (change.calls?.length && change.hostId === timeline.host) redrawCallsSoon(change.calls);
  }
  drawSidebarSoon();
  if (drawnSoon(m)) summaryDrawSoon();
}

let countQueued = false;
/**
 * Counts a message taken. The count is written after the draw that leaves nothing waiting (the
 * notebooks, the sidebar and the timeline drawn): `data-applied` says the messages are on screen.
 */
function count(): void {
  applied++;
  if (countQueued) return;
  countQueued = true;
  whenDrawn(() => {
    countQueued = false;
    doc.body.dataset.applied = String(applied);
  });
}

function connect(): void {
  const source = new EventSource(doc.body.dataset.events || "api/events?batch=1");
  source.addEventListener("open", () => say("live"));
  source.addEventListener("error", () => say("disconnected: reconnecting…", true));
  source.addEventListener("state", (event: MessageEvent<string>) => {
    try {
      reset(JSON.parse(event.data) as State);
    } catch (err) {
      say(`The server sent a state the page cannot use: ${(err as Error).message}`, true);
    }
    doc.body.dataset.states = String(Number(doc.body.dataset.states ?? 0) + 1);
  });
  source.addEventListener("message", (event: MessageEvent<string>) => {
    let value: unknown;
    try {
      value = JSON.parse(event.data);
    } catch {
      say("The server sent a message that is not JSON", true);
      count();
      return;
    }
    take(value);
  });
  // `?batch=1`: the messages of one of the server's writes, as one event (their JSON array).
  source.addEventListener("batch", (event: MessageEvent<string>) => {
    let values: unknown;
    try {
      values = JSON.parse(event.data);
    } catch {
      say("The server sent a batch that is not JSON", true);
      count();
      return;
    }
    if (!Array.isArray(values)) {
      say("The server sent a batch that is not a list of messages", true);
      count();
      return;
    }
    for (const value of values) take(value);
  });
}

/** One hub message off the stream: applied (or said to be unusable), and counted. */
function take(value: unknown): void {
  if (typeof value !== "object" || value === null || typeof (value as { type?: unknown }).type !== "string")
    say("The server sent a message the page cannot use: it has no type", true);
  else handle(value as HubMessage);
  count();
}

noNotebook();
// Elapsed times ("running for 12 s") move on by themselves.
setInterval(() => tick(doc), 1000);
doc.title = "nbagent view";
connect();
