/**
 * `nbagent mcp --http` with the official SDK client over Streamable HTTP: the shared scenarios
 * (scenarios.ts), the bearer token and Origin checks, one runtime per MCP session (isolated, shut
 * down when the session closes), a body past the size limit, and the server's end leaving no kernel.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type HttpServer, httpClient, httpServer, marker, pidsWithEnv, tempDir, textOf } from "./helpers.js";
import {
  alive,
  answersBadInput,
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

test("SIGTERM ends the server and shuts every session's kernels down", async () => {
  const pid = await kernelPid(client);
  assert.ok((await pidsWithEnv(mark.name, mark.value)).includes(pid));
  server.child.kill("SIGTERM");
  assert.deepEqual(await server.exited, [0, null]);
  assert.equal(alive(pid), false);
  assert.deepEqual(await pidsWithEnv(mark.name, mark.value), []);
});
