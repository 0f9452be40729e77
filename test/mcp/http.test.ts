/**
 * `nbagent mcp --http` with the official SDK client over Streamable HTTP: the shared scenarios
 * (scenarios.ts), the bearer token and Origin checks, one runtime per MCP session (isolated, shut
 * down when the session closes), a body past the size limit, and the server's end leaving no kernel.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  type HttpServer,
  httpClient,
  httpServer,
  marker,
  newClient,
  pidsWithEnv,
  tempDir,
  textOf,
} from "./helpers.js";
import {
  alive,
  answersBadInput,
  cancelIgnoredIsTold,
  cancelInterruptsKernel,
  editsAndRunsNotebook,
  kernelPid,
  listsTools,
  outlivesTheCall,
  readsArtifactResource,
  refusesHugeCall,
  reportsProgress,
} from "./scenarios.js";

const TOKEN = "test-token-0123456789";
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const ALLOWED = "https://notebooks.example.org";
const mark = marker();
let server: HttpServer;
let client: Client;
let dir: string;

before(async () => {
  dir = await tempDir("nbagent-mcp-http-");
  server = await httpServer(["--cwd", dir, "--allow-origin", ALLOWED], {
    NBAGENT_MCP_TOKEN: TOKEN,
    [mark.name]: mark.value,
  });
  client = await httpClient(server.url, AUTH);
});

after(async () => {
  await client?.close();
  if (server && server.child.exitCode === null) server.child.kill("SIGKILL");
});

test("lists the toolbox's tools with their schemas, descriptions and annotations", () => listsTools(client));
test("creates, edits and runs a notebook: text and a PNG as MCP image content", () =>
  editsAndRunsNotebook(client, dir));
test("sends progress while a cell runs", () => reportsProgress(client, dir));
test("cancellation interrupts the kernel and keeps its state", () => cancelInterruptsKernel(client));
test("a cancel the cell ignores: the next call says the kernel's state is lost", () =>
  cancelIgnoredIsTold(client));
test("artifacts are resources, read page by page", () => readsArtifactResource(client));
test("a call past its wait budget returns a run id; the runs tool gets its result", () =>
  outlivesTheCall(client, dir));
test("bad input gets clear errors and the server keeps serving", () => answersBadInput(client));
test("a body past the size limit is refused (413), and the server keeps serving", () =>
  refusesHugeCall(client, (err) => {
    assert.equal(err.code, 413);
  }));

test("a request without the token, with a wrong token, or from a foreign Origin is refused", async () => {
  const refused = async (headers: Record<string, string>, code: number, message: RegExp) => {
    await assert.rejects(httpClient(server.url, headers), (err: Error & { code?: number }) => {
      assert.equal(err.code, code);
      assert.match(err.message, message);
      return true;
    });
  };
  await refused({}, 401, /Unauthorized: send Authorization: Bearer <token>/);
  await refused({ Authorization: "Bearer wrong-token-0123456789" }, 401, /Unauthorized: wrong bearer token/);
  await refused({ Authorization: TOKEN }, 401, /Unauthorized/);
  await refused(
    { ...AUTH, Origin: "http://evil.example" },
    403,
    /Origin http:\/\/evil\.example is not allowed/,
  );
  await refused({ ...AUTH, Origin: "http://localhost.evil.example" }, 403, /is not allowed/);
  await refused({ ...AUTH, Origin: "null" }, 403, /is not allowed/);
  // A refused request reaches no session: the direct answer says why.
  const res = await fetch(server.url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.equal(res.status, 401);
  assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);

  for (const origin of ["http://localhost:6274", "http://127.0.0.1", "http://[::1]:8080", ALLOWED]) {
    const c = await httpClient(server.url, { ...AUTH, Origin: origin });
    assert.ok((await c.listTools()).tools.length >= 2, origin);
    await (c.transport as StreamableHTTPClientTransport).terminateSession();
    await c.close();
  }
});

test("two sessions have their own kernels; closing one shuts its kernels down", async () => {
  const a = await httpClient(server.url, AUTH);
  const b = await httpClient(server.url, AUTH);
  const set = await a.callTool({ name: "python", arguments: { cells: [{ code: "only_in_a = 1" }] } });
  assert.equal(set.isError, undefined, textOf(set));
  const other = await b.callTool({ name: "python", arguments: { cells: [{ code: "only_in_a" }] } });
  assert.equal(other.isError, true);
  assert.match(textOf(other), /NameError: name 'only_in_a' is not defined/);
  const pidA = await kernelPid(a);
  const pidB = await kernelPid(b);
  assert.notEqual(pidA, pidB);

  await (a.transport as StreamableHTTPClientTransport).terminateSession();
  await a.close();
  assert.equal(alive(pidA), false);
  assert.equal(alive(pidB), true);
  const still = await b.callTool({ name: "python", arguments: { cells: [{ code: "print('b lives')" }] } });
  assert.equal(textOf(still).trim(), "b lives");
  await (b.transport as StreamableHTTPClientTransport).terminateSession();
  await b.close();
  assert.equal(alive(pidB), false);
});

/**
 * A client that drops its connection mid-call (docs/mcp.md, "Disconnects"): MCP's Streamable HTTP
 * says a disconnect is not a cancellation, so the call goes on. A new connection to the same
 * session names the call holding the kernel (run r2) when it waits for the kernel in vain, and
 * resumes the dropped stream (Last-Event-ID) to get the call's own result; a new session has
 * kernels of its own and sees nothing of the old one.
 */
test("a dropped connection: the call goes on, the next call names it, the stream resumes to its result", async () => {
  const gate = join(dir, `go-${Date.now()}`);
  const first = new StreamableHTTPClientTransport(server.url, { requestInit: { headers: AUTH } });
  const a = newClient();
  await a.connect(first);
  const set = await a.callTool({ name: "python", arguments: { cells: [{ code: "kept = 'a'" }] } });
  assert.equal(set.isError, undefined, textOf(set));
  const sessionId = first.sessionId!;
  const code = `import os, time\nprint('holding', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)\nprint('released')`;
  const call = {
    method: "tools/call" as const,
    params: { name: "python", arguments: { cells: [{ code }], timeout: 600, wait: 600 } },
  };
  let token: string | undefined;
  let holding!: () => void;
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const dropped = a.request(call, CallToolResultSchema, {
    onresumptiontoken: (t) => {
      token = t;
    },
    onprogress: (p) => {
      if (p.message?.includes("holding")) holding();
    },
    timeout: 600_000,
  });
  dropped.catch(() => {}); // rejected when the connection closes
  await held;
  await a.close(); // the connection goes; no cancel is sent, no DELETE
  assert.ok(token, "the stream was resumable (a priming event gave an event id)");

  const again = new StreamableHTTPClientTransport(server.url, { sessionId, requestInit: { headers: AUTH } });
  const b = newClient();
  await b.connect(again); // the same session: no initialize
  const waiting = await b.callTool({
    name: "python",
    arguments: { cells: [{ code: "print(kept)" }], timeout: 1, wait: 600 },
  });
  assert.equal(waiting.isError, true);
  assert.match(
    textOf(waiting),
    /^\(no output\)\nCell 1 did not run: the call's timeout of 1 second ran out while it waited for the kernel, which run r2 holds \(python call, holding it for \d+ seconds? so far; cell 1 is running\)\. Nothing ran\. To wait for r2 and get its result, call the runs tool: \{"run_id":"r2"\}; to stop it \(the kernel keeps its state unless the cell ignores the interrupt\): \{"run_id":"r2","action":"interrupt"\}\. Then call again\.$/,
  );

  // A new session: its own kernels, free at once; the old session's kernel and runs are not its.
  const c = await httpClient(server.url, AUTH);
  const other = await c.callTool({
    name: "python",
    arguments: { cells: [{ code: "print('kept' in dir())" }] },
  });
  assert.equal(textOf(other), "False");
  await (c.transport as StreamableHTTPClientTransport).terminateSession();
  await c.close();

  // The dropped call's stream, resumed from its last event: the call's own result arrives there.
  const resumed = b.request(call, CallToolResultSchema, { resumptionToken: token, timeout: 600_000 });
  writeFileSync(gate, "");
  const result = await resumed;
  assert.equal(textOf(result), "holding\nreleased");
  const after = await b.callTool({ name: "python", arguments: { cells: [{ code: "print(kept)" }] } });
  assert.equal(textOf(after), "a", "the state was kept: nothing cancelled the call");
  await again.terminateSession();
  await b.close();
});

test("SIGTERM ends the server and shuts every session's kernels down", async () => {
  const pid = await kernelPid(client);
  assert.ok((await pidsWithEnv(mark.name, mark.value)).includes(pid));
  server.child.kill("SIGTERM");
  assert.deepEqual(await server.exited, [0, null]);
  assert.equal(alive(pid), false);
  assert.deepEqual(await pidsWithEnv(mark.name, mark.value), []);
});
