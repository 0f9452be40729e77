/**
 * `nbagent mcp --http`: Streamable HTTP at /mcp (docs/mcp.md). Every request passes the Origin and
 * bearer-token checks (http-guard.ts); every MCP session gets its own server and toolbox, so two
 * clients never share kernels, and closing a session (DELETE, or the server stopping) shuts its
 * kernels down.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createToolbox, type Toolbox } from "../tools/index.js";
import { type Refusal, refusal } from "./http-guard.js";
import { createMcpServer } from "./server.js";

export const MCP_PATH = "/mcp";

export interface HttpOptions {
  cwd: string;
  version: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  token: string;
  /** Origins allowed besides loopback ones (exact `scheme://host[:port]`). */
  allowOrigins: string[];
  log: (line: string) => void;
}

interface Session {
  id: string;
  transport: StreamableHTTPServerTransport;
  server: Server;
  toolbox: Toolbox;
  closed?: Promise<void>;
}

export interface HttpMcp {
  url: string;
  /** Open MCP sessions (each with its own kernels). */
  sessionCount(): number;
  close(): Promise<void>;
}

function refuse(res: ServerResponse, r: Refusal): void {
  res.writeHead(r.status, { "Content-Type": "application/json", ...r.headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: r.message }, id: null }));
}

export async function startHttp(options: HttpOptions): Promise<HttpMcp> {
  const sessions = new Map<string, Session>();

  const closeSession = (s: Session): Promise<void> => {
    s.closed ??= (async () => {
      sessions.delete(s.id);
      await s.server.close(); // cancels its running calls
      await s.toolbox.dispose();
    })();
    return s.closed;
  };

  const openSession = async (): Promise<Session> => {
    const id = randomUUID();
    const toolbox = createToolbox({ cwd: options.cwd });
    const server = createMcpServer({ toolbox, version: options.version, log: options.log });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        sessions.set(id, session);
      },
      onsessionclosed: () => closeSession(session),
    });
    const session: Session = { id, transport, server, toolbox };
    transport.onclose = () => void closeSession(session);
    await server.connect(transport);
    return session;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== MCP_PATH)
      return refuse(res, { status: 404, message: `Not found: the MCP endpoint is ${MCP_PATH}` });
    const why = refusal(req, options.token, options.allowOrigins);
    if (why) return refuse(res, why);
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const s = sessions.get(sid);
      if (!s)
        return refuse(res, { status: 404, message: "Session not found: start a new session (initialize)." });
      return s.transport.handleRequest(req, res);
    }
    if (req.method !== "POST")
      return refuse(res, { status: 400, message: "Bad Request: Mcp-Session-Id header required" });
    const s = await openSession();
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
    sessionCount: () => sessions.size,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
        await Promise.all([...sessions.values()].map(closeSession));
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
  if (!["127.0.0.1", "localhost", "::1"].includes(options.host))
    options.log(
      `warning: listening on ${options.host}, not only this machine: anyone with the token can run code`,
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
