/**
 * Tool descriptors (src/tools/descriptor.ts): what a toolbox makes and what describeTools() says
 * without a runtime are the same tools, described alike; a descriptor the toolbox is given (one that
 * exists only in tests) is made, found and drawn through the same paths as nbagent's own.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  drawsInPlace,
  plainTheme,
  registerToolView,
  renderToolCall,
  renderToolResult,
} from "../../src/render/index.js";
import {
  createToolbox,
  describeTools,
  TOOL_DESCRIPTORS,
  type ToolboxOptions,
} from "../../src/tools/index.js";
import { notebookDescriptor } from "../../src/tools/notebook/descriptor.js";
import { pythonDescriptor } from "../../src/tools/python/python.js";
import { testSettings } from "../settings.js";
import { ECHO_NAME, echoDescriptor } from "./echo-descriptor.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-descriptors-"));
after(() => rmSync(root, { recursive: true, force: true }));

const json = (v: unknown) => JSON.parse(JSON.stringify(v));

type Options = Omit<ToolboxOptions, "cwd" | "settings"> & Partial<Pick<ToolboxOptions, "settings">>;

async function sameAsToolbox(options: Options) {
  const runtime = { stateRoot: join(root, "state"), artifactMaxAgeMs: 0, ...options.runtime };
  const settings = options.settings ?? testSettings();
  const described = describeTools({ ...options, settings, runtime });
  const toolbox = createToolbox({ ...options, settings, cwd: root, runtime });
  try {
    assert.deepEqual(
      described.map((d) => d.name),
      toolbox.entries.map((e) => e.descriptor.name),
    );
    for (const [k, { descriptor, tool }] of toolbox.entries.entries()) {
      const d = described[k];
      assert.equal(d.descriptor, descriptor);
      assert.equal(tool.name, d.name);
      assert.equal(tool.label, d.label);
      assert.equal(tool.description, d.description, `${d.name}'s description`);
      assert.deepEqual(json(tool.parameters), json(d.parameters), `${d.name}'s schema`);
    }
    return described;
  } finally {
    await toolbox.dispose();
  }
}

test("describeTools() says what a toolbox with the same options holds, without making a runtime", async () => {
  const plain = await sameAsToolbox({});
  assert.deepEqual(
    plain.map((d) => d.name),
    TOOL_DESCRIPTORS.map((d) => d.name),
  );
  // The facts a description states follow the options: kept kernels, idle time, a gateway.
  const kept = await sameAsToolbox({ runtime: { maxSessions: 2, idleTimeoutMs: 90_000 } });
  const python = kept.find((d) => d.descriptor === pythonDescriptor)!;
  assert.match(python.description, /beyond the 2 kept/);
  assert.match(python.description, /idle for 2 minutes/);
  assert.doesNotMatch(python.description, /Jupyter gateway/);
  const gateway = await sameAsToolbox({
    settings: testSettings({ NBAGENT_GATEWAY_URL: "http://127.0.0.1:9" }),
  });
  assert.match(gateway.find((d) => d.descriptor === pythonDescriptor)!.description, /Jupyter gateway/);
});

test("a descriptor given to the toolbox is made, found and described like nbagent's own", async () => {
  const descriptors = [...TOOL_DESCRIPTORS, echoDescriptor];
  const described = await sameAsToolbox({ descriptors, runtime: { maxSessions: 3 } });
  assert.equal(described.at(-1)?.description, "Echoes text back (test only; 3 kernels kept).");
  const toolbox = createToolbox({
    cwd: root,
    settings: testSettings(),
    descriptors,
    runtime: { stateRoot: join(root, "state") },
  });
  try {
    assert.equal(toolbox.find(ECHO_NAME)?.descriptor, echoDescriptor);
    assert.equal(toolbox.find("no_such_tool"), undefined);
    const result = await toolbox.get(echoDescriptor).execute("t", { text: "hi" });
    assert.deepEqual(result.content, [{ type: "text", text: "echo: hi" }]);
  } finally {
    await toolbox.dispose();
  }
});

test("renderers are found by descriptor: a tool without a view is drawn plainly, one registered is used", () => {
  const o = { width: 80, expanded: false, theme: plainTheme() };
  const result = { content: [{ type: "text" as const, text: "echo: hi" }], details: {} };
  assert.deepEqual(renderToolCall(echoDescriptor, { text: "hi" }, o), ["echo_test text=hi"]);
  assert.deepEqual(renderToolResult(echoDescriptor, result, o), ["│ echo: hi"]);
  registerToolView(echoDescriptor, {
    call: (args) => [`ECHO ${(args as { text: string }).text}`],
    result: (content) => [`said ${content.length} thing`],
    inPlace: () => true,
  });
  assert.deepEqual(renderToolCall(echoDescriptor, { text: "hi" }, o), ["ECHO hi"]);
  // A recorded call names its tool: the view is found by the descriptor of that name.
  assert.deepEqual(renderToolResult(ECHO_NAME, result, o), ["said 1 thing"]);
  assert.equal(drawsInPlace(echoDescriptor, {}), true);
});

test("which calls draw their progress in place is the views' to say (several cells, a notebook run)", () => {
  assert.equal(drawsInPlace(pythonDescriptor, { cells: [{ code: "1" }] }), false);
  assert.equal(drawsInPlace(pythonDescriptor, { cells: [{ code: "1" }, { code: "2" }] }), true);
  assert.equal(drawsInPlace(notebookDescriptor, { action: "run", notebook_path: "a.ipynb" }), true);
  assert.equal(drawsInPlace(notebookDescriptor, { action: "read", notebook_path: "a.ipynb" }), false);
  for (const d of TOOL_DESCRIPTORS) assert.equal(typeof drawsInPlace(d, {}), "boolean");
});
