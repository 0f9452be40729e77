/**
 * MCP over the tools' descriptors (src/tools/descriptor.ts), in process over the SDK's linked
 * in-memory transport: the server lists exactly the toolbox's descriptors (the CLI knows the same
 * set), a descriptor that exists only in tests is listed and called with no other change, and the
 * ids a result's text names (artifact://<id>, a run id) come along in `_meta`, equal to the text's.
 * The python calls run on a real kernel; a cell that must still run blocks on a gate file.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer } from "../../src/mcp/server.js";
import { REFS_META } from "../../src/mcp/tool-adapter.js";
import { createToolbox, TOOL_DESCRIPTORS, type ToolboxOptions } from "../../src/tools/index.js";
import { nbagent } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { ECHO_NAME, echoDescriptor } from "../tools/echo-descriptor.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-mcp-descriptors-"));
const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
  rmSync(root, { recursive: true, force: true });
});

async function connect(
  options: Omit<ToolboxOptions, "cwd" | "settings"> = {},
): Promise<{ client: Client; cwd: string }> {
  const cwd = mkdtempSync(join(root, "w-"));
  const toolbox = createToolbox({
    ...options,
    cwd,
    settings: testSettings(),
    runtime: { stateRoot: join(root, "state") },
  });
  const server = createMcpServer({ toolbox, version: "0" });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "nbagent-test", version: "0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  closers.push(async () => {
    await client.close();
    await toolbox.dispose();
  });
  return { client, cwd };
}

const textOf = (r: CallToolResult) =>
  r.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
/** The artifact URIs the text names, in order, each once (what a reader of the text finds). */
const urisIn = (text: string) => [...new Set(text.match(/artifact:\/\/[A-Za-z0-9_-]+/g) ?? [])];
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

test("MCP lists exactly the toolbox's descriptors, and the CLI's call knows the same tools", async () => {
  const { client } = await connect();
  const { tools } = await client.listTools();
  const names = TOOL_DESCRIPTORS.map((d) => d.name);
  assert.deepEqual(
    tools.map((t) => t.name),
    names,
  );
  for (const [k, d] of TOOL_DESCRIPTORS.entries()) {
    assert.equal(tools[k].title, d.label);
    assert.deepEqual(tools[k].annotations, { title: d.label, ...d.hints });
  }
  const cli = await nbagent(["call", "no_such_tool", "{}"], { cwd: root });
  assert.equal(cli.code, 2);
  assert.match(cli.stderr, new RegExp(`\\(tools: ${names.join(", ")}\\)`));
});

test("a descriptor only the test knows is listed and called with no other change; its artifact is in _meta", async () => {
  const { client } = await connect({ descriptors: [...TOOL_DESCRIPTORS, echoDescriptor] });
  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === ECHO_NAME);
  assert.ok(echo, "listed");
  assert.equal(echo.description, "Echoes text back (test only; 4 kernels kept).");
  assert.deepEqual(echo.annotations, { title: "Echo (test)", readOnlyHint: true, openWorldHint: false });
  const plain = await call(client, ECHO_NAME, { text: "hi" });
  assert.equal(textOf(plain), "echo: hi");
  assert.equal(plain._meta, undefined, "no ids named, no _meta");
  const saved = await call(client, ECHO_NAME, { text: "kept", save: true });
  const uris = urisIn(textOf(saved));
  assert.equal(uris.length, 1);
  assert.deepEqual(saved._meta?.[REFS_META.artifacts], uris);
  const { resources } = await client.listResources();
  assert.deepEqual(
    resources.map((r) => r.uri),
    uris,
  );
  const read = await client.readResource({ uri: uris[0] });
  assert.equal((read.contents[0] as { text: string }).text, "kept\n");
});

test("a python call's cut output and the artifact tool's page: _meta names the artifacts the text names", async () => {
  const { client } = await connect();
  const code = "for i in range(3000): print(f'line {i} ' + 'x' * 40)";
  const cut = await call(client, "python", { cells: [{ code: "1" }, { code }, { code }] });
  assert.equal(cut.isError, undefined, textOf(cut));
  const uris = urisIn(textOf(cut));
  assert.ok(uris.length >= 1, textOf(cut));
  assert.deepEqual(cut._meta?.[REFS_META.artifacts], uris);
  assert.equal(cut._meta?.[REFS_META.runId], undefined);
  const { resources } = await client.listResources();
  assert.deepEqual(
    resources.map((r) => r.uri),
    [...uris].reverse(),
    "newest first",
  );

  const page = await call(client, "artifact", { id: uris[0], offset: 10, limit: 5 });
  assert.equal(page.isError, undefined, textOf(page));
  assert.deepEqual(urisIn(textOf(page)), [uris[0]]);
  assert.deepEqual(page._meta?.[REFS_META.artifacts], [uris[0]]);

  const small = await call(client, "python", { cells: [{ code: "print('short')" }] });
  assert.equal(small._meta, undefined, "a result that names nothing has no _meta");
});

test("a call that goes on in the background: _meta's run id is the one its text gives, also when it ends", async () => {
  const { client, cwd } = await connect({ waitSeconds: 1 });
  await call(client, "python", { cells: [{ code: "1" }], wait: 600 }); // the kernel is up
  const gate = join(cwd, "gate");
  const code = `import os, time\nprint('started', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.02)\nprint('done')`;
  const first = await call(client, "python", { cells: [{ code }], timeout: 600 });
  const runId = /run (r\d+)/.exec(textOf(first))?.[1];
  assert.ok(runId, textOf(first));
  assert.equal(first._meta?.[REFS_META.runId], runId);
  writeFileSync(gate, "");
  const end = await call(client, "runs", { run_id: runId, wait: 600 });
  assert.match(textOf(end), new RegExp(`^Run ${runId} \\(python call\\) finished`));
  assert.equal(end._meta?.[REFS_META.runId], runId);
});
