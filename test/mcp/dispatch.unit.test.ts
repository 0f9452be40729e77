/**
 * Plain requests go from the line transport to the SDK's request dispatch directly
 * (src/mcp/dispatch.ts), on the real SDK Server: they are answered as the SDK's own path answers
 * them (a handler's result, a method not found, a handler's error), and only what the quick check
 * leaves to the schema (a request with other `_meta`, notifications) still takes the SDK's message
 * handler. If the SDK loses the method the route uses, dispatchRequestsDirectly says so (false) and
 * this test fails, so the loss is seen.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { type JSONRPCMessage, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { dispatchRequestsDirectly } from "../../src/mcp/dispatch.js";
import { LineTransport } from "../../src/mcp/stdio-transport.js";

test("plain requests reach the SDK's dispatch directly and are answered as on its own path", async () => {
  const server = new Server({ name: "t", version: "0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
  const called: unknown[] = [];
  server.fallbackRequestHandler = async (request) => {
    called.push(request.params);
    if (request.method === "fail") throw new Error("it failed");
    return { content: [{ type: "text", text: request.method }] };
  };
  const input = new PassThrough();
  const output = new PassThrough();
  const transport = new LineTransport(input, output);
  let written = "";
  output.on("data", (d: Buffer) => {
    written += d.toString("utf8");
  });
  await server.connect(transport);
  assert.equal(dispatchRequestsDirectly(server, transport), true);
  // The SDK's own message handler, counted: it should see only what the quick check leaves to it.
  const sdkSaw: JSONRPCMessage[] = [];
  const sdk = transport.onmessage!;
  transport.onmessage = (m) => {
    sdkSaw.push(m);
    sdk(m);
  };
  const lines = [
    { jsonrpc: "2.0", id: 1, method: "ping" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
    { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "x", _meta: { progressToken: 9 } } },
    { jsonrpc: "2.0", id: 4, method: "fail" },
    { jsonrpc: "2.0", id: "five", method: "other", params: { _meta: { other: 1 } } },
    { jsonrpc: "2.0", method: "notifications/initialized" },
  ];
  for (const l of lines) input.write(`${JSON.stringify(l)}\n`);
  await new Promise<void>((resolve) => {
    const check = () => (written.split("\n").filter(Boolean).length >= 5 ? resolve() : setImmediate(check));
    check();
  });
  await server.close();
  const replies = written
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const byId = new Map(replies.map((r) => [r.id, r]));
  assert.deepEqual(byId.get(1), { jsonrpc: "2.0", id: 1, result: {} });
  assert.deepEqual(byId.get(2).result, { tools: [] });
  assert.deepEqual(byId.get(3).result, { content: [{ type: "text", text: "tools/call" }] });
  assert.deepEqual(byId.get(4).error, { code: -32603, message: "it failed" });
  assert.deepEqual(byId.get("five").result, { content: [{ type: "text", text: "other" }] });
  assert.equal(replies.length, 5);
  assert.deepEqual(called, [{ name: "x", _meta: { progressToken: 9 } }, undefined, { _meta: { other: 1 } }]);
  assert.deepEqual(
    sdkSaw.map((m) => ("id" in m ? m.id : (m as { method: string }).method)),
    ["five", "notifications/initialized"],
  );
});
