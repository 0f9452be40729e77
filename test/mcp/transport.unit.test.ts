/**
 * The stdio line transport on real streams: messages split across chunks, a line past the size limit
 * skipped and answered with its request's id (at the line's start or end), lines that are not JSON
 * or not JSON-RPC answered as JSON-RPC asks, and the messages after them still read; the quick
 * JSON-RPC check agrees with the SDK's schema; replies written straight to a descriptor keep their
 * bytes and order.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { isPlainJsonRpc } from "../../src/mcp/jsonrpc-shape.js";
import { findRequestId, LineTransport } from "../../src/mcp/stdio-transport.js";

async function feed(chunks: string[], maxBytes = 64) {
  const input = new PassThrough();
  const output = new PassThrough();
  const transport = new LineTransport(input, output, maxBytes);
  const messages: JSONRPCMessage[] = [];
  const errors: string[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = (e) => errors.push(e.message);
  let closed = false;
  transport.onclose = () => {
    closed = true;
  };
  await transport.start();
  let written = "";
  output.on("data", (d: Buffer) => {
    written += d.toString("utf8");
  });
  for (const c of chunks) input.write(c);
  input.end();
  await new Promise((resolve) => input.once("close", resolve));
  const replies = written
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return { messages, errors, replies, closed };
}

const ping = (id: number | string) => JSON.stringify({ jsonrpc: "2.0", id, method: "ping" });

test("reads messages split across chunks and several in one chunk", async () => {
  const two = `${ping(1)}\n${ping(2)}\r\n`;
  const { messages, replies, closed } = await feed([two.slice(0, 7), two.slice(7, 40), two.slice(40)], 1024);
  assert.deepEqual(
    messages.map((m) => (m as { id: number }).id),
    [1, 2],
  );
  assert.deepEqual(replies, []);
  assert.equal(closed, true);
});

test("a line past the limit is answered with its id (at the end or the start) and skipped", async () => {
  const big = "x".repeat(500);
  const idLast = `{"method":"tools/call","params":{"name":"python","arguments":{"code":"${big}"}},"jsonrpc":"2.0","id":7}`;
  const idFirst = `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"code":"${big}"}}`;
  const noId = `{"method":"notifications/x","params":{"code":"${big}"},"jsonrpc":"2.0"}`;
  const text = `${idLast}\n${idFirst}\n${noId}\n${ping(8)}\n`;
  const chunks = text.match(/[\s\S]{1,50}/g)!;
  const { messages, replies, errors } = await feed(chunks);
  assert.deepEqual(
    replies.map((r) => [r.id, r.error.code]),
    [
      [7, -32600],
      ["abc", -32600],
    ],
  );
  assert.match(
    replies[0].error.message,
    /^Request too large: \d+ bytes \(limit 64\)\. Put large data in a file/,
  );
  assert.deepEqual(
    messages.map((m) => (m as { id: number }).id),
    [8],
  );
  assert.equal(errors.length, 3);
});

test("not JSON gets a parse error; JSON that is not JSON-RPC gets Invalid Request; reading goes on", async () => {
  const { messages, replies } = await feed([`not json\n{"id":3,"hello":1}\n${ping(4)}\n`], 1024);
  assert.deepEqual(
    replies.map((r) => [r.id, r.error.code]),
    [
      [null, -32700],
      [3, -32600],
    ],
  );
  assert.deepEqual(
    messages.map((m) => (m as { id: number }).id),
    [4],
  );
});

test("findRequestId reads only a top-level id at either end", () => {
  assert.equal(findRequestId('{"jsonrpc":"2.0","id":12,"method"', ""), 12);
  assert.equal(findRequestId("{", ',"jsonrpc":"2.0","id":"a\\"b"}'), 'a"b');
  assert.equal(findRequestId('{"method":"x","params":{"id":5', 'xx"}}'), undefined);
});

test("the quick JSON-RPC check accepts only what the SDK's schema accepts, as it is", () => {
  const cases: unknown[] = [
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "python", arguments: { a: 1 } } },
    { jsonrpc: "2.0", id: "x", method: "ping" },
    { jsonrpc: "2.0", id: 2, method: "tools/call", params: { _meta: { progressToken: "t" }, name: "p" } },
    { jsonrpc: "2.0", id: 3, method: "tools/call", params: { _meta: { progressToken: 5 } } },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 4, reason: "r" } },
    // the quick check leaves these to the schema (some valid, some not)
    { jsonrpc: "2.0", id: 5, method: "x", params: { _meta: { progressToken: 1.5 } } },
    { jsonrpc: "2.0", id: 6, method: "x", params: { _meta: { other: 1 } } },
    { jsonrpc: "2.0", id: 7, method: "x", params: [1] },
    { jsonrpc: "2.0", id: 8, method: "x", extra: 1 },
    { jsonrpc: "2.0", id: null, method: "x" },
    { jsonrpc: "2.0", id: 1.5, method: "x" },
    { jsonrpc: "1.0", id: 9, method: "x" },
    { jsonrpc: "2.0", id: 10, result: {} },
    { jsonrpc: "2.0", id: 11, error: { code: 1, message: "m" } },
    { jsonrpc: "2.0", method: 5 },
    [1],
    null,
  ];
  let quick = 0;
  for (const c of cases) {
    const schema = JSONRPCMessageSchema.safeParse(c);
    if (!isPlainJsonRpc(c)) continue;
    quick++;
    assert.equal(schema.success, true, JSON.stringify(c));
    assert.deepEqual(schema.data, c, JSON.stringify(c));
  }
  assert.equal(quick, 6);
});

test("replies written straight to a descriptor come out whole and in order when the pipe fills", async () => {
  // `cat` copies what the transport writes to its stdin (a socket with a descriptor, as the
  // server's stdout is) back to us: the first reply is far larger than the socket's buffer.
  const cat = spawn("cat", [], { stdio: ["pipe", "pipe", "inherit"] });
  // A socket names its descriptor as process.stdout does (the transport writes to `fd`).
  const fd = (cat.stdin as unknown as { _handle: { fd: number } })._handle.fd;
  assert.ok(fd > 2);
  const transport = new LineTransport(new PassThrough(), Object.assign(cat.stdin, { fd }));
  const big = "x".repeat(3 * 1024 * 1024);
  const sent = [
    transport.send({ jsonrpc: "2.0", id: 1, result: { text: big } }),
    transport.send({ jsonrpc: "2.0", id: 2, result: {} }),
  ];
  let out = "";
  cat.stdout.on("data", (d: Buffer) => {
    out += d.toString("utf8");
  });
  await Promise.all(sent);
  cat.stdin.end();
  await new Promise((resolve) => cat.once("close", resolve));
  const lines = out.split("\n");
  assert.equal(lines.length, 3);
  assert.equal(JSON.parse(lines[0]).result.text, big);
  assert.equal(JSON.parse(lines[1]).id, 2);
  assert.equal(lines[2], "");
});
