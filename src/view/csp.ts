/**
 * The Content-Security-Policies the `nbagent view` server sends (docs/view.md "Safety"), here so
 * the server and the page's tests send the same. No DOM or Node imports.
 *
 * PAGE_CSP, for the page and its bundle: scripts and styles only from the server's own files — no
 * inline script, no eval, no inline style (the page sets styles through the CSSOM) — images only from
 * itself and data:/blob: URLs, frames only from itself, nothing embeds the page.
 *
 * FRAME_CSP, for frame.html, where HTML and JavaScript outputs run: `sandbox allow-scripts` gives
 * the document an opaque origin even when it is opened on its own, not in the page's sandboxed
 * iframe; inside, an output's scripts may be inline, use eval and load from the web (plotly,
 * bokeh); it can fetch nothing (connect-src 'none'), submit no form, and be framed only by the page.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export const FRAME_CSP = [
  "sandbox allow-scripts",
  "default-src 'none'",
  "script-src 'self' 'unsafe-inline' 'unsafe-eval' https: data: blob:",
  "style-src 'self' 'unsafe-inline' https: data:",
  "img-src * data: blob:",
  "font-src * data:",
  "media-src * data: blob:",
  "connect-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
].join("; ");
