/**
 * The script of frame.html, the sandboxed document an HTML or JavaScript output runs in (frame.ts).
 * It takes the output's HTML from the page that embeds it (its parent only), inserts it, and runs
 * the output's scripts in document order, each external one loaded before the next runs, as a
 * notebook's HTML (plotly, bokeh, …) expects; then it tells the parent its height as it changes.
 */
let rendered = false;

async function runScripts(root: ParentNode): Promise<void> {
  for (const old of Array.from(root.querySelectorAll("script"))) {
    const script = document.createElement("script");
    for (const attr of Array.from(old.attributes)) script.setAttribute(attr.name, attr.value);
    script.textContent = old.textContent;
    const loaded = script.src
      ? new Promise<void>((resolve) => {
          script.addEventListener("load", () => resolve());
          script.addEventListener("error", () => resolve());
        })
      : Promise.resolve();
    old.replaceWith(script);
    await loaded;
  }
}

function reportHeight(): void {
  const height = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
  parent.postMessage({ height }, "*");
}

window.addEventListener("message", (event) => {
  if (event.source !== parent || rendered) return;
  const data = event.data as { html?: unknown } | null;
  if (!data || typeof data.html !== "string") return;
  rendered = true;
  // parsed as a fragment, its scripts do not run as they land: runScripts runs them one by one
  const inert = document.createElement("template");
  inert.innerHTML = data.html;
  document.body.append(inert.content);
  new ResizeObserver(reportHeight).observe(document.body);
  reportHeight();
  void runScripts(document.body).then(reportHeight);
});
parent.postMessage({ ready: true }, "*");
