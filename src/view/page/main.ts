/**
 * The view page's entry (bundled to page.js): reads the message stream the server sends (an
 * EventSource at the body's `data-events`, "events" by default; each event's data is one
 * ViewMessage, ../protocol.ts), keeps one NotebookView per notebook path, lists the notebooks, and
 * shows the chosen one. A message that does not fit is shown in the status line, never guessed at.
 * After each message, body's `data-applied` counts the messages taken (tests wait on it).
 */
import { checkViewMessage, type ViewMessage } from "../protocol.js";
import { NotebookView } from "./notebook-view.js";

const doc = document;
const views = new Map<string, NotebookView>();
let current: string | undefined;
let applied = 0;

const nav = doc.getElementById("nb-list")!;
const main = doc.getElementById("nb-main")!;
const status = doc.getElementById("nb-status")!;

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
  for (const button of nav.querySelectorAll<HTMLButtonElement>("button"))
    button.classList.toggle("nb-current", button.dataset.path === path);
}

function listNotebooks(): void {
  nav.replaceChildren(
    ...[...views.keys()].map((path) => {
      const button = doc.createElement("button");
      button.type = "button";
      button.dataset.path = path;
      button.textContent = path;
      button.title = path;
      button.classList.toggle("nb-current", path === current);
      button.addEventListener("click", () => show(path));
      return button;
    }),
  );
}

function handle(message: ViewMessage): void {
  let view = views.get(message.path);
  if (message.kind === "notebook-closed") {
    views.delete(message.path);
    if (current === message.path) {
      current = undefined;
      main.replaceChildren();
      const next = views.keys().next();
      if (!next.done) show(next.value);
    }
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
    listNotebooks();
  }
  const problem = view.apply(message);
  if (problem) say(`Out of step with the server: ${message.kind} in ${message.path}: ${problem}`, true);
  if (current === undefined) show(message.path);
}

function connect(): void {
  const source = new EventSource(doc.body.dataset.events || "events");
  source.addEventListener("open", () => say("live"));
  source.addEventListener("error", () => say("disconnected: reconnecting…", true));
  source.addEventListener("message", (event: MessageEvent<string>) => {
    let value: unknown;
    try {
      value = JSON.parse(event.data);
    } catch {
      say("The server sent a message that is not JSON", true);
      return;
    }
    const checked = checkViewMessage(value);
    if ("error" in checked) say(`The server sent a message the page cannot use: ${checked.error}`, true);
    else handle(checked.message);
    applied++;
    doc.body.dataset.applied = String(applied);
  });
}

connect();
