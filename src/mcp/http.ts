/**
 * `nbagent mcp --http`: Streamable HTTP at /mcp (docs/mcp.md). Every request passes the Host, Origin
 * and bearer-token checks (sys/http-guard.ts); every MCP session gets its own server and toolbox (its
 * own runtime, keeping at most `maxKernels` kernels), so two clients never share kernels. At most
 * `maxSessions` sessions are open at once (one more is refused at once); closing a session (DELETE,
 * `idleMs` without requests, or the server stopping) shuts its kernels down. A client whose
 * connection breaks mid-call does not cancel it: the call goes on, its stream resumable.
 */

import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { packageRoot } from "../assets.js";
import type { Settings } from "../runtime/settings.js";
import { hostRule, isLoopbackAddress, type Refusal, refusal } from "../sys/http-guard.js";
import { plural } from "../sys/units.js";
import { createToolbox, type Toolbox } from "../tools/index.js";
import { viewSocketDir, withViewSocket } from "../view/host.js";
import { ViewHub } from "../view/hub.js";
import { underPrefix, viewHandler } from "../view/server.js";
import { SessionEventStore } from "./event-store.js";
import { IdleWatch } from "./http-idle.js";
import { idleClosedText, sessionCapText, span, UNKNOWN_SESSION_TEXT } from "./http-texts.js";
import { StreamableHTTPServerTransport } from "./sdk.js";
import { createMcpServer } from "./server.js";

export const MCP_PATH = "/mcp";
/** Where `nbagent view`'s page and API are mounted (docs/view.md), behind a token of their own. */
export const VIEW_PATH = "/view";

export interface HttpOptions {
  cwd: string;
  /** The settings the CLI resolved (runtime/settings.ts); every session's runtime gets them. */
  settings: Settings;
  version: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  token: string;
  /** Origins allowed besides loopback ones (exact `scheme://host[:port]`). */
  allowOrigins: string[];
  /** Host names (or `name:port`, or `*`) served besides loopback ones (sys/http-guard.ts). */
  allowHosts: string[];
  /** Open MCP sessions at most; one more is refused at once (503). */
  maxSessions: number;
  /** Kernels each session keeps at most (its runtime's limit); undefined: the runtime's default. */
  maxKernels?: number;
  /** A session without requests (and no background run) this long is closed; 0: never. */
  idleMs: number;
  log: (line: string) => void;
}

interface Session {
  id: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  toolbox: Toolbox;
  idle: IdleWatch;
  closing?: Promise<void>;
}

/** Ids of sessions closed for being idle, remembered for the 404's text (the newest this many). */
const MAX_IDLE_RECORDS = 1024;

export interface HttpMcp {
  url: string;
  /** The view's URL with its token (`…/view/?token=…`); undefined without a socket root. */
  viewUrl?: string;
  /** Open MCP sessions (each with its own kernels). */
  sessionCount(): number;
  close(): Promise<void>;
}

function refuse(res: ServerResponse, r: Refusal): void {
  res.writeHead(r.status, { "Content-Type": "application/json", ...r.headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: r.message }, id: null }));
}

export async function startHttp(options: HttpOptions): Promise<HttpMcp> {
  const guard = {
    token: options.token,
    allowedOrigins: options.allowOrigins,
    hosts: hostRule(options.host, options.allowHosts),
  };
  /** Initialized sessions by id. */
  const sessions = new Map<string, Session>();
  /** Every session not closed, initialized or not: what the cap counts. */
  const live = new Set<Session>();
  /** Sessions closed for being idle: id → when. */
  const idleClosed = new Map<string, number>();

  const closeSession = (s: Session, why?: "idle"): Promise<void> => {
    if (!s.closing) {
      s.idle.stop();
      live.delete(s);
      if (sessions.get(s.id) === s) sessions.delete(s.id);
      if (why === "idle") {
        idleClosed.set(s.id, Date.now());
        if (idleClosed.size > MAX_IDLE_RECORDS) idleClosed.delete(idleClosed.keys().next().value as string);
      }
      // Deferred: server.close() closes the transport, whose onclose comes back here.
      s.closing = Promise.resolve().then(async () => {
        await s.server.close(); // cancels its running calls
        await s.toolbox.dispose();
      });
    }
    return s.closing;
  };

  const closeIdle = (s: Session) => {
    closeSession(s, "idle").then(
      () =>
        options.log(
          `session ${s.id} closed after ${span(options.idleMs)} without requests; its kernels were shut down`,
        ),
      (err) => options.log(`session ${s.id}: closing it failed: ${(err as Error).message}`),
    );
  };

  const openSession = async (): Promise<Session> => {
    const id = randomUUID();
    const toolbox = withViewSocket(
      createToolbox({
        cwd: options.cwd,
        settings: options.settings,
        runtime: options.maxKernels === undefined ? undefined : { maxSessions: options.maxKernels },
      }),
      "mcp-http",
      options.cwd,
    );
    const server = createMcpServer({ toolbox, version: options.version, log: options.log });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      // A broken connection is not a cancellation: the call goes on and the client may resume its
      // stream (Last-Event-ID) to get the rest, its result included (docs/mcp.md, "Disconnects").
      eventStore: new SessionEventStore(),
      onsessioninitialized: () => {
        if (!session.closing) sessions.set(id, session);
      },
      onsessionclosed: () => closeSession(session),
    });
    const idle = new IdleWatch(
      options.idleMs,
      () => {
        const runs = toolbox.runs.running().length;
        if (runs)
          options.log(
            `session ${id}: no requests for ${span(options.idleMs)}, but ${plural(runs, "run")} still going: kept open`,
          );
        return runs > 0;
      },
      () => closeIdle(session),
    );
    const session: Session = { id, transport, server, toolbox, idle };
    live.add(session);
    transport.onclose = () => void closeSession(session);
    await server.connect(transport);
    return session;
  };

  /** POST and DELETE are the session's activity until their response ends (http-idle.ts). */
  const track = (s: Session, req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET") return;
    s.idle.begin();
    res.once("close", () => s.idle.end());
  };

  // The view of every nbagent host of this user, as `nbagent view` serves it, with its own token (not
  // the MCP token: a person's browser holds it, an MCP client never needs it). Its hub watches the
  // hosts' sockets only once a request showed that token.
  // It answers to loopback names only (its Host check), so it is mounted only where this machine can
  // reach it by one: a loopback address or every address.
  const local = isLoopbackAddress(options.host) || options.host === "0.0.0.0" || options.host === "::";
  const viewDir = local ? viewSocketDir() : undefined;
  const viewToken = randomBytes(24).toString("hex");
  const hub = viewDir ? new ViewHub(viewDir) : undefined;
  const root = packageRoot();
  const view = hub
    ? viewHandler({
        hub,
        token: viewToken,
        prefix: VIEW_PATH,
        pageDir: root ? join(root, "dist", "view", "page") : undefined,
      })
    : undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (view && underPrefix(req.url, VIEW_PATH)) return view(req, res);
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== MCP_PATH)
      return refuse(res, { status: 404, message: `Not found: the MCP endpoint is ${MCP_PATH}` });
    const why = refusal(req, guard);
    if (why) return refuse(res, why);
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const s = sessions.get(sid);
      if (!s) {
        const at = idleClosed.get(sid);
        const message = at === undefined ? UNKNOWN_SESSION_TEXT : idleClosedText(sid, at, options.idleMs);
        return refuse(res, { status: 404, message });
      }
      track(s, req, res);
      return s.transport.handleRequest(req, res);
    }
    if (req.method !== "POST")
      return refuse(res, { status: 400, message: "Bad Request: Mcp-Session-Id header required" });
    if (live.size >= options.maxSessions) {
      options.log(`refused a new session: ${live.size} open, the cap (--max-sessions)`);
      return refuse(res, { status: 503, message: sessionCapText(options.maxSessions, options.idleMs) });
    }
    const s = await openSession();
    track(s, req, res);
    await s.transport.handleRequest(req, res);
    if (!sessions.has(s.id)) await closeSession(s); // it was not an initialize request
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      options.log(`request failed: ${(err as Error).stack ?? err}`);
      if (!res.headersSent) refuse(res, { status: 500, message: "Internal error" });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, options.host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    viewUrl: hub
      ? `http://${isLoopbackAddress(options.host) ? host : "127.0.0.1"}:${port}${VIEW_PATH}/?token=${viewToken}`
      : undefined,
    sessionCount: () => sessions.size,
    close() {
      closing ??= (async () => {
        hub?.close();
        const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
        await Promise.all([...live].map((s) => closeSession(s)));
        http.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

/** Serves until SIGINT / SIGTERM, then closes every session (and its kernels). */
export async function serveHttp(options: HttpOptions & { tokenGenerated: boolean }): Promise<number> {
  let mcp: HttpMcp;
  try {
    mcp = await startHttp(options);
  } catch (err) {
    options.log(
      `cannot listen on ${options.host}:${options.port}: ${(err as Error).message} (--port N picks another port, 0 a free one)`,
    );
    return 1;
  }
  options.log(`listening on ${mcp.url}`);
  if (options.tokenGenerated)
    options.log(
      `token: ${options.token}  (send "Authorization: Bearer <token>"; set NBAGENT_MCP_TOKEN to choose it)`,
    );
  if (mcp.viewUrl)
    options.log(
      `view: ${mcp.viewUrl}  (every nbagent process of yours, live, in a browser on this machine; its own token, not the MCP one)`,
    );
  const kernels =
    options.maxKernels === undefined ? "" : `, each keeping at most ${options.maxKernels} kernels`;
  const idle = options.idleMs > 0 ? `, each closed after ${span(options.idleMs)} without requests` : "";
  options.log(`sessions: at most ${options.maxSessions} open${kernels}${idle}`);
  if (!isLoopbackAddress(options.host))
    options.log(
      `warning: listening on ${options.host}, not only this machine: anyone with the token can run code` +
        (options.allowHosts.length ? "" : " (any Host header is accepted: --allow-host H limits it)"),
    );
  let signals = 0;
  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      if (++signals > 1) process.exit(sig === "SIGINT" ? 130 : 143);
      resolve();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  await mcp.close();
  return 0;
}
