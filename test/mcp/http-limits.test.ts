/**
 * `nbagent mcp --http` limits, with the official SDK client over real HTTP: the cap on open sessions
 * (refused at once with a text naming the cap), kernels per session, sessions closed when idle (their
 * kernel processes end; a late request gets 404 saying why), and the Host header check against DNS
 * rebinding (raw requests with chosen Host headers).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type HttpServer, httpClient, httpServer, tempDir, textOf } from "./helpers.js";
import { alive, kernelPid } from "./scenarios.js";

const TOKEN = "test-token-limits-0123456789";
const AUTH = { Authorization: `Bearer ${TOKEN}` };

async function end(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport).terminateSession();
  await client.close();
}

function refusedWith(code: number, message: RegExp) {
  return (err: Error & { code?: number }) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.message, message);
    return true;
  };
}

/** A raw request with the Host header given (fetch cannot set it). */
function raw(
  url: URL,
  host: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? "POST",
        headers: {
          Host: host,
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          ...options.headers,
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body === undefined ? undefined : JSON.stringify(options.body));
  });
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};

/** Resolves when the server's stderr has a line matching `re` (the event, not a time). */
function logged(server: HttpServer, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const m = re.exec(server.stderr());
      if (!m) return false;
      server.child.stderr.off("data", look);
      resolve(m[0]);
      return true;
    };
    if (look()) return;
    server.child.stderr.on("data", look);
    server.exited.then(() => reject(new Error(`server exited before logging ${re}: ${server.stderr()}`)));
  });
}

describe("a server with --max-sessions 2, NBAGENT_MCP_MAX_KERNELS=2 and an allowed Host list", () => {
  let server: HttpServer;
  before(async () => {
    const dir = await tempDir("nbagent-mcp-limits-");
    server = await httpServer(
      ["--cwd", dir, "--max-sessions", "2", "--allow-host", "notebooks.example.org"],
      {
        NBAGENT_MCP_TOKEN: TOKEN,
        NBAGENT_MCP_MAX_KERNELS: "2",
        NBAGENT_MCP_ALLOW_HOSTS: "other.example:1234",
      },
    );
  });
  after(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  test("a session past the cap is refused at once, naming the cap and how to raise it", async () => {
    await logged(
      server,
      /sessions: at most 2 open, each keeping at most 2 kernels, each closed after 30 minutes without requests/,
    );
    const a = await httpClient(server.url, AUTH);
    const b = await httpClient(server.url, AUTH);
    await assert.rejects(
      httpClient(server.url, AUTH),
      refusedWith(
        503,
        /Too many MCP sessions: this server keeps at most 2 open at once and all are in use\. Close one \(HTTP DELETE with its Mcp-Session-Id\) or raise the cap: --max-sessions N or NBAGENT_MCP_MAX_SESSIONS=N\. A session without requests for 30 minutes is closed by itself\./,
      ),
    );
    // The open sessions are untouched; closing one makes room.
    assert.ok((await b.listTools()).tools.length >= 2);
    await end(a);
    const c = await httpClient(server.url, AUTH);
    assert.ok((await c.listTools()).tools.length >= 2);
    await end(b);
    await end(c);
  });

  test("each session keeps at most --max-kernels kernels, and its tools say so", async () => {
    const c = await httpClient(server.url, AUTH);
    const python = (await c.listTools()).tools.find((t) => t.name === "python");
    assert.match(python?.description ?? "", /beyond the 2 kept \(at most 2, python sessions/);
    await end(c);
  });

  test("Host: loopback names with the port and the allowed ones are served; others get 403", async () => {
    const port = server.url.port;
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      "notebooks.example.org:8443",
      "other.example:1234",
    ]) {
      const res = await raw(server.url, host, { headers: AUTH, body: INITIALIZE });
      assert.equal(res.status, 200, `${host}: ${res.body}`);
      assert.match(res.body, /"serverInfo"/);
      const sid = res.headers["mcp-session-id"] as string;
      const del = await raw(server.url, host, {
        method: "DELETE",
        headers: { ...AUTH, "Mcp-Session-Id": sid },
      });
      assert.equal(del.status, 200, `${host}: ${del.body}`);
    }
    for (const host of [
      `evil.example:${port}`,
      `localhost.evil.example:${port}`,
      "other.example:1235",
      "notebooks.example.org.evil:80",
    ]) {
      const res = await raw(server.url, host, { headers: AUTH, body: INITIALIZE });
      assert.equal(res.status, 403, host);
      const { error } = JSON.parse(res.body);
      assert.equal(
        error.message,
        `Forbidden: Host ${host} is not allowed (DNS-rebinding protection: this server answers to Host localhost, 127.0.0.1, [::1], notebooks.example.org, other.example:1234; add a name with --allow-host H or NBAGENT_MCP_ALLOW_HOSTS=H1,H2).`,
      );
    }
    // Checked before the token: a rebinding page learns nothing else.
    const noToken = await raw(server.url, `evil.example:${port}`, { body: INITIALIZE });
    assert.equal(noToken.status, 403);
  });
});

test("a bad limit is an Error: text and exit 2, before anything listens", async () => {
  await assert.rejects(
    httpServer(["--max-sessions", "0"]),
    /exited \(2\): nbagent mcp: Error: --max-sessions must be a whole number from 1 to 10000, not '0'/,
  );
  await assert.rejects(
    httpServer([], { NBAGENT_MCP_IDLE_MINUTES: "soon" }),
    /Error: NBAGENT_MCP_IDLE_MINUTES must be a number of minutes from 0 \(never close\) to 10080 \(a week\), not 'soon'/,
  );
  await assert.rejects(
    httpServer(["--allow-host", "http://x/"]),
    /Error: --allow-host \/ NBAGENT_MCP_ALLOW_HOSTS: 'http:\/\/x\/' is not a host name/,
  );
});

test("a session idle for --idle-minutes is closed, its kernel process ends, and a late request hears why", async () => {
  const dir = await tempDir("nbagent-mcp-idle-");
  // 0.05 minutes = 3 seconds without requests; the test waits for the server's line, not a time.
  const server = await httpServer(["--cwd", dir, "--idle-minutes", "0.05"], { NBAGENT_MCP_TOKEN: TOKEN });
  try {
    const client = await httpClient(server.url, AUTH);
    const sid = (client.transport as StreamableHTTPClientTransport).sessionId as string;
    const pid = await kernelPid(client);
    assert.equal(alive(pid), true);
    await logged(
      server,
      new RegExp(`session ${sid} closed after 3 seconds without requests; its kernels were shut down`),
    );
    assert.equal(alive(pid), false);
    await assert.rejects(
      client.callTool({ name: "python", arguments: { cells: [{ code: "1" }] } }),
      refusedWith(
        404,
        new RegExp(
          `Session not found: session ${sid} was closed at \\d\\d:\\d\\d:\\d\\d UTC after 3 seconds without requests \\(--idle-minutes, NBAGENT_MCP_IDLE_MINUTES\\) and its kernels were shut down: their variables are gone\\. Start a new session \\(initialize\\)\\.`,
        ),
      ),
    );
    await client.close();
    // A new session works as before.
    const fresh = await httpClient(server.url, AUTH);
    const r = await fresh.callTool({ name: "python", arguments: { cells: [{ code: "print('new')" }] } });
    assert.equal(textOf(r).trim(), "new");
    await end(fresh);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

test("a session whose run goes on in the background is kept open past the idle time, then closed", async () => {
  const dir = await tempDir("nbagent-mcp-idle-run-");
  const server = await httpServer(["--cwd", dir, "--idle-minutes", "0.05"], { NBAGENT_MCP_TOKEN: TOKEN });
  try {
    const client = await httpClient(server.url, AUTH);
    const sid = (client.transport as StreamableHTTPClientTransport).sessionId as string;
    const gate = join(dir, "gate");
    const first = await client.callTool({
      name: "python",
      arguments: {
        timeout: 600,
        wait: 1,
        cells: [
          {
            code: `import os, time\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)\nprint('finished')`,
          },
        ],
      },
    });
    const id = /^Still running after 1 s: run (r\d+)/.exec(textOf(first))?.[1];
    assert.ok(id, textOf(first));
    await logged(
      server,
      new RegExp(`session ${sid}: no requests for 3 seconds, but 1 run still going: kept open`),
    );
    assert.doesNotMatch(server.stderr(), new RegExp(`session ${sid} closed`));
    writeFileSync(gate, "");
    const done = await client.callTool({ name: "runs", arguments: { run_id: id, wait: 600 } });
    assert.match(textOf(done), /finished$/);
    await logged(server, new RegExp(`session ${sid} closed after 3 seconds without requests`));
    await client.close();
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});
