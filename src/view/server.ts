/**
 * The view's HTTP server (docs/view.md, "Safety"): on 127.0.0.1, every request checked as the MCP
 * HTTP server checks its own (sys/http-guard.ts: Host against DNS rebinding), its Origin when it has
 * one must be the view's own, and it must carry the token — once in the URL (`?token=`, then a
 * HttpOnly SameSite=Strict cookie and a redirect that drops it from the address bar), or as a bearer
 * header. An action needs the bearer header, not the cookie alone (the page reads the token from
 * `/api/token`, which no other origin and no sandboxed output frame can read). Every answer has a strict Content-Security-Policy. `GET /api/state` is the hosts' merged
 * snapshot, `GET /api/events` the live messages as Server-Sent Events, `POST /api/action` (JSON) an
 * interrupt, restart or export; anything else is a file of dist/view/page/ (the page), or a placeholder.
 */
import { timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { basename, extname, join, normalize, sep } from "node:path";
import { hostAllowed, hostRule, tokenMatches } from "../sys/http-guard.js";
import { FRAME_CSP, PAGE_CSP } from "./csp.js";
import type { ViewHub } from "./hub.js";

export const COOKIE = "nbagent_view";

/** No inline script or style, nothing from elsewhere, no framing of the view (src/view/csp.ts). */
export const CSP = PAGE_CSP;

/** A page's events beyond this many unsent bytes: the page reads too slowly and is disconnected (it reconnects and reloads the state). */
const MAX_BUFFERED = 4 * 1024 * 1024;

/**
 * A batched stream (the page's) is written at most this often: what comes in between is joined into
 * the next write, and the first message after a quiet spell goes at once. The page draws a write at
 * the frame after it (src/view/page/draw-tick.ts); each write cost a browser on two cores about a
 * millisecond of CPU across its processes, a 200-cell run ~170 writes unpaced (docs/view.md "Cost").
 */
const BATCH_WRITE_MS = 50;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".map": "application/json",
};

/** What frame.html loads: its own requests carry no cookie (docs/view.md "Checks"). */
const FRAME_FILES = new Set(["/frame.js", "/frame.css"]);

const PLACEHOLDER = `<!doctype html>
<html><head><meta charset="utf-8"><title>nbagent view</title></head>
<body><h1>nbagent view</h1>
<p>The page is not built in this install. The data is served: <a href="/api/state">/api/state</a> (every host, its sessions, runs and latest calls) and <code>/api/events</code> (Server-Sent Events).</p>
</body></html>
`;

export interface ViewServerOptions {
  hub: ViewHub;
  token: string;
  /** Where the page's files are (dist/view/page); missing: the placeholder. */
  pageDir?: string;
  /**
   * The path the view is mounted at, without a trailing slash (`/view` in `nbagent mcp --http`); ""
   * (the default) for the root. The page, its files and `api/*` are under it, the cookie's Path too.
   */
  prefix?: string;
}

export function createViewServer(options: ViewServerOptions): Server {
  return createServer(viewHandler(options));
}

/** Whether a request's path is the view's (under the prefix), for a server that mounts it. */
export function underPrefix(url: string | undefined, prefix: string): boolean {
  const path = new URL(url ?? "/", "http://127.0.0.1").pathname;
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * The view's request handler, for its own server (`nbagent view`) or mounted under a prefix in
 * another one (`nbagent mcp --http` at /view): the same checks, API and files either way.
 */
export function viewHandler(options: ViewServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { hub, token } = options;
  const prefix = options.prefix ?? "";
  const hosts = hostRule("127.0.0.1", []);
  return (req, res) => {
    const base = {
      "Content-Security-Policy": CSP,
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
    };
    for (const [k, v] of Object.entries(base)) res.setHeader(k, v);
    const refuse = (status: number, message: string) => {
      res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8" });
      res.end(`${message}\n`);
    };
    const host = req.headers.host;
    if (!hostAllowed(host, hosts))
      return refuse(
        403,
        `Forbidden: ${host === undefined ? "no Host header" : `Host ${host} is not allowed`} (DNS-rebinding protection: the view answers to localhost, 127.0.0.1 and [::1] only).`,
      );
    // What frame.html loads comes from the sandboxed frame itself: its opaque origin sends `Origin:
    // null` and no cookie. These two files are the package's, nothing of the user's: served to any
    // origin without the token, or no HTML output would ever show (docs/view.md "Checks").
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (req.method === "GET" && underPrefix(req.url, prefix) && FRAME_FILES.has(path.slice(prefix.length)))
      return file(path.slice(prefix.length), res, options.pageDir);
    const port = (req.socket.localPort ?? 0).toString();
    const origin = req.headers.origin;
    if (origin !== undefined && !ownOrigin(origin, port))
      return refuse(
        403,
        `Forbidden: Origin ${origin} is not allowed (only the view's own page, http://127.0.0.1:${port}, may call it).`,
      );
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (!underPrefix(req.url, prefix)) return refuse(404, `Not Found: the view is at ${prefix}/`);
    // The page's relative URLs (api/events, page.js) need the trailing slash.
    const pathname = url.pathname === prefix ? "/" : url.pathname.slice(prefix.length);
    const given = url.searchParams.get("token");
    if (given !== null && req.method === "GET") {
      if (!same(given, token)) return refuse(401, "Unauthorized: wrong token in the URL.");
      url.searchParams.delete("token");
      res.writeHead(302, {
        "Set-Cookie": `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=${prefix || "/"}`,
        Location: prefix + pathname + url.search,
      });
      return res.end();
    }
    if (url.pathname === prefix && prefix !== "") {
      res.writeHead(302, { Location: `${prefix}/${url.search}` });
      return res.end();
    }
    if (!same(cookieOf(req) ?? "", token) && !tokenMatches(req.headers.authorization, token))
      return refuse(
        401,
        prefix
          ? `Unauthorized: no token. Open the view's URL \`nbagent mcp --http\` logged at start (view: …${prefix}/?token=…; it carries the token once, then a cookie), or send Authorization: Bearer <view token>.`
          : "Unauthorized: no token. Open the URL `nbagent view` printed (it carries the token once, then a cookie), or send Authorization: Bearer <token>.",
      );
    // Hosts are watched from the first request that shows the token (a mounted view starts idle).
    hub.start();
    if (pathname === "/api/state" && req.method === "GET") return json(res, 200, hub.state());
    if (pathname === "/api/events" && req.method === "GET")
      return events(req, res, hub, url.searchParams.get("batch") === "1");
    // The token for the page's own API calls: readable by the page only (no CORS), never by an output.
    if (pathname === "/api/token" && req.method === "GET") return json(res, 200, { token });
    if (pathname === "/api/action") {
      if (req.method !== "POST") return refuse(405, "Method Not Allowed: actions are POSTed (JSON).");
      // Not the cookie alone: a request the page's content makes (an image, a link) carries the cookie.
      if (!tokenMatches(req.headers.authorization, token))
        return refuse(
          401,
          "Unauthorized: an action needs the token in a header (Authorization: Bearer <token>; the page has it from /api/token), not the cookie alone.",
        );
      return void action(req, res, hub).catch((err: unknown) =>
        json(res, 500, { error: String((err as Error)?.message ?? err) }),
      );
    }
    if (req.method !== "GET") return refuse(405, "Method Not Allowed.");
    return file(pathname, res, options.pageDir);
  };
}

function ownOrigin(origin: string, port: string): boolean {
  return ["127.0.0.1", "localhost", "[::1]"].some((h) => origin === `http://${h}:${port}`);
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookieOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === COOKIE) return v.join("=");
  }
  return undefined;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

/**
 * Server-Sent Events: the state first (event `state`), then every hub message (default event), each
 * written as it comes — or, asked with `?batch=1` (the page does), the messages as events `batch`
 * whose data is their JSON array, one write at most every BATCH_WRITE_MS: a browser dispatches and
 * parses one event per write, not one per message, and takes fewer writes (docs/view.md "Cost").
 */
function events(req: IncomingMessage, res: ServerResponse, hub: ViewHub, batch: boolean): void {
  res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", Connection: "keep-alive" });
  res.write(`event: state\ndata: ${JSON.stringify(hub.state())}\n\n`);
  // The messages of one turn of the event loop go out in one write at least (a host's socket
  // delivers them in bursts: one system call each cost nbagent view most of its CPU).
  let pending = "";
  /** When the last batch was written (performance.now()); whether a flush is asked for, and its timer when it waits. */
  let written = -Infinity;
  let asked = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    timer = undefined;
    if (batch) {
      const wait = written + BATCH_WRITE_MS - performance.now();
      if (wait > 0) {
        timer = setTimeout(flush, wait);
        return;
      }
      written = performance.now();
    }
    asked = false;
    const chunk = batch ? `event: batch\ndata: [${pending}]\n\n` : pending;
    const had = pending !== "";
    pending = "";
    if (had && !res.destroyed) res.write(chunk);
  };
  const stop = hub.listen((m) => {
    // A page that reads too slowly is let go (bounded memory): EventSource reconnects and gets the state again.
    if (res.writableLength + pending.length > MAX_BUFFERED) {
      stop();
      pending = "";
      res.destroy();
      return;
    }
    if (!asked) {
      asked = true;
      setImmediate(flush);
    }
    if (batch) pending += `${pending ? "," : ""}${JSON.stringify(m)}`;
    else pending += `data: ${JSON.stringify(m)}\n\n`;
  });
  req.on("close", () => {
    stop();
    clearTimeout(timer);
  });
}

async function action(req: IncomingMessage, res: ServerResponse, hub: ViewHub): Promise<void> {
  if (!/^application\/json\b/i.test(req.headers["content-type"] ?? ""))
    return json(res, 415, { error: "send the action as JSON (Content-Type: application/json)" });
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) return json(res, 413, { error: "the action is too large" });
  }
  let a: { host?: unknown; action?: unknown; key?: unknown; runId?: unknown };
  try {
    a = JSON.parse(body);
  } catch {
    return json(res, 400, { error: "the body is not JSON" });
  }
  if (
    typeof a?.host !== "string" ||
    (a.action !== "interrupt" && a.action !== "restart" && a.action !== "export")
  )
    return json(res, 400, {
      error:
        'an action is {"host": host id, "action": "interrupt"|"restart"|"export", "key": session key} or {"host", "action": "interrupt", "runId"}',
    });
  const result = await hub.act(a.host, {
    action: a.action,
    ...(a.key !== undefined ? { key: a.key as never } : {}),
    ...(typeof a.runId === "string" ? { runId: a.runId } : {}),
  });
  if (!result) return json(res, 404, { error: `no host ${a.host} (it ended?)` });
  return json(res, 200, result);
}

function file(pathname: string, res: ServerResponse, dir: string | undefined): void {
  let rel: string;
  try {
    rel = pathname === "/" ? "index.html" : decodeURIComponent(pathname).replace(/^\/+/, "");
  } catch {
    rel = "";
  }
  if (dir && existsSync(join(dir, "index.html"))) {
    const full = normalize(join(dir, rel));
    if (full.startsWith(dir + sep) && existsSync(full) && statSync(full).isFile()) {
      // Outputs run in frame.html: its own policy sandboxes it (an opaque origin) and lets their scripts run.
      if (basename(full) === "frame.html") res.setHeader("Content-Security-Policy", FRAME_CSP);
      res.writeHead(200, { "Content-Type": TYPES[extname(full)] ?? "application/octet-stream" });
      return void res.end(readFileSync(full));
    }
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
    return void res.end("Not Found\n");
  }
  if (rel !== "index.html") {
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
    return void res.end("Not Found\n");
  }
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(PLACEHOLDER);
}
