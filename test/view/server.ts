/**
 * A tiny stand-in for the `nbagent view` server, for the page's browser tests: it serves the built
 * page (dist/view/page) with the Content-Security-Policies the real server will send
 * (src/view/csp.ts), sets a page cookie, streams ViewMessages as the real server does at
 * /api/events (an empty `state` event first, then each as a hub message `{type:"notebook", message}`),
 * and counts every other request to /api/ with the cookie it carried.
 */
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";
import { FRAME_CSP, PAGE_CSP } from "../../src/view/csp.js";
import type { ViewMessage } from "../../src/view/protocol.js";

export const PAGE_DIR = new URL("../../dist/view/page/", import.meta.url).pathname;
export const COOKIE = "nbagent_view_token=secret-4711";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".woff2": "font/woff2",
};

export interface ApiRequest {
  path: string;
  cookie: string | undefined;
  origin: string | undefined;
}

export class ViewTestServer {
  readonly api: ApiRequest[] = [];
  /** What the stream's `state` event says (every new connection gets it). */
  state: unknown = { hosts: [] };
  private readonly streams = new Set<ServerResponse>();
  private readonly sent: ViewMessage[] = [];
  private readonly server = createServer((req, res) => void this.handle(req, res));
  url = "";

  /** `csp: false` serves everything without its policy: the tests check the page is safe without it too. */
  constructor(private readonly options: { csp?: boolean } = {}) {}

  private policy(csp: string): Record<string, string> {
    return this.options.csp === false ? {} : { "content-security-policy": csp };
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    return this;
  }

  /** Sends a message to every open page (and to pages that connect later, in order). */
  send(message: ViewMessage): void {
    this.sent.push(message);
    for (const res of this.streams) res.write(`data: ${JSON.stringify({ type: "notebook", message })}\n\n`);
  }

  get messageCount(): number {
    return this.sent.length;
  }

  /** Ends every open stream: the pages reconnect, and start again from the state. */
  dropStreams(): void {
    for (const res of this.streams) res.end();
    this.streams.clear();
  }

  async close(): Promise<void> {
    for (const res of this.streams) res.end();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/api/events") {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-store",
        ...this.policy(PAGE_CSP),
      });
      // retry: the page's EventSource reconnects soon after dropStreams()
      res.write(`retry: 50\nevent: state\ndata: ${JSON.stringify(this.state)}\n\n`);
      for (const m of this.sent) res.write(`data: ${JSON.stringify({ type: "notebook", message: m })}\n\n`);
      this.streams.add(res);
      req.on("close", () => this.streams.delete(res));
      return;
    }
    if (path.startsWith("/api/")) {
      this.api.push({ path, cookie: req.headers.cookie, origin: req.headers.origin });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      return;
    }
    if (path === "/lib/plotlike.js") {
      // a library an HTML output loads, as plotly's output loads plotly.js (answered late, so an
      // inline script after it would run first if the frame did not wait for it)
      setTimeout(() => {
        res
          .writeHead(200, { "content-type": "text/javascript" })
          .end("window.PlotLike = { name: 'plotlike' };");
      }, 200);
      return;
    }
    const file = path === "/" ? "index.html" : normalize(path.slice(1));
    if (file.startsWith("..")) {
      res.writeHead(404).end();
      return;
    }
    const body = await readFile(join(PAGE_DIR, file)).catch(() => undefined);
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    const headers: Record<string, string> = {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      ...this.policy(file === "frame.html" ? FRAME_CSP : PAGE_CSP),
      "x-content-type-options": "nosniff",
    };
    if (file === "index.html") headers["set-cookie"] = `${COOKIE}; Path=/; SameSite=Strict`;
    res.writeHead(200, headers).end(body);
  }
}
