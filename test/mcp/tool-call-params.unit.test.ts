/**
 * The server checks a tools/call request's params by hand (src/mcp/server.ts): it must accept and
 * refuse what the SDK's CallToolRequestSchema does, and give the same name, arguments and token.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { toolCallParams } from "../../src/mcp/server.js";

test("toolCallParams accepts and refuses what CallToolRequestSchema does", () => {
  const cases: unknown[] = [
    { name: "python", arguments: { cells: [{ code: "1" }] } },
    { name: "python" },
    { name: "python", arguments: {}, _meta: { progressToken: "t" } },
    { name: "python", _meta: { progressToken: 3, other: "x" } },
    { name: "python", _meta: {} },
    { name: "python", arguments: [1, 2] },
    { name: "python", arguments: null },
    { name: "python", arguments: "x" },
    { name: 5 },
    {},
    { arguments: {} },
    { name: "python", _meta: { progressToken: 1.5 } },
    { name: "python", _meta: { progressToken: null } },
    { name: "python", _meta: "x" },
    [1],
    null,
    "x",
  ];
  for (const params of cases) {
    const schema = CallToolRequestSchema.safeParse({ method: "tools/call", params });
    const ours = toolCallParams(params);
    const what = JSON.stringify(params);
    assert.equal(typeof ours !== "string", schema.success, what);
    if (typeof ours === "string" || !schema.success) continue;
    assert.equal(ours.name, schema.data.params.name, what);
    assert.deepEqual(ours.arguments, schema.data.params.arguments, what);
    assert.equal(ours.progressToken, schema.data.params._meta?.progressToken, what);
  }
});
