/**
 * HTML and JavaScript outputs, each in its own sandboxed iframe (docs/view.md "Safety"): sandbox
 * "allow-scripts" without "allow-same-origin", so the frame's origin is opaque — its code cannot
 * read the page's cookies or storage, reach into the page's DOM, or call the page's API with the
 * page's credentials — and no top navigation, popups or forms. The frame's document is frame.html,
 * served from its own path with its own CSP (src/view/csp.ts, which lets inline scripts run there
 * and nowhere else, and sandboxes the document even when opened directly); the page posts it the
 * output's HTML, and it posts back its height.
 */

interface Frame {
  iframe: HTMLIFrameElement;
  html: string;
  sent: boolean;
}

const frames = new Map<Window, Frame>();
const MAX_HEIGHT = 20000;
let listening = false;

function listen(win: Window): void {
  if (listening) return;
  listening = true;
  win.addEventListener("message", (event) => {
    const frame = event.source ? frames.get(event.source as Window) : undefined;
    if (!frame) return;
    const data = event.data as { height?: unknown; ready?: unknown } | null;
    if (data && data.ready === true) send(frame);
    if (data && typeof data.height === "number" && Number.isFinite(data.height))
      frame.iframe.style.height = `${Math.max(16, Math.min(MAX_HEIGHT, Math.ceil(data.height)))}px`;
  });
}

/** Posts the output's HTML, once: "*" because the frame's origin is opaque (it holds nothing secret). */
function send(frame: Frame): void {
  if (frame.sent || !frame.iframe.contentWindow) return;
  frame.sent = true;
  frame.iframe.contentWindow.postMessage({ html: frame.html }, "*");
}

/** Where frame.html is: the page's `data-frame` (the server's frame path), else next to the page. */
function frameUrl(doc: Document): string {
  return doc.body.dataset.frame || "frame.html";
}

/** An iframe that will show `html` in its sandbox. Forget it with `releaseFrames` when it leaves the DOM. */
export function sandboxedFrame(doc: Document, html: string): HTMLIFrameElement {
  const win = doc.defaultView!;
  listen(win);
  const iframe = doc.createElement("iframe");
  iframe.className = "nb-frame";
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("referrerpolicy", "no-referrer");
  iframe.setAttribute("loading", "eager");
  iframe.title = "output";
  iframe.src = frameUrl(doc);
  const frame: Frame = { iframe, html, sent: false };
  // contentWindow exists once the iframe is in a document (the caller adds it in this task); the
  // frame says `ready` when its script listens, and its load event comes after that in any case
  const register = () => {
    if (iframe.contentWindow) frames.set(iframe.contentWindow, frame);
  };
  queueMicrotask(register);
  iframe.addEventListener("load", () => {
    register();
    send(frame);
  });
  return iframe;
}

/** Forgets the frames under root (removed from the page). */
export function releaseFrames(root: Element): void {
  for (const iframe of root.querySelectorAll("iframe.nb-frame")) {
    for (const [win, frame] of frames) if (frame.iframe === iframe) frames.delete(win);
  }
}
