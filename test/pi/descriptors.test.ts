/**
 * pi over the tools' descriptors (src/tools/descriptor.ts): the extension, given to pi as a
 * function (pi's SDK extensionFactories, from source), registers exactly the descriptors' tools —
 * names, descriptions, schemas as describeTools() says them — and a descriptor that exists only in
 * tests is registered, called by the model and drawn by pi with no other change.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@mariozechner/pi-ai";
import { createNbagentExtension } from "../../src/pi/extension.js";
import { describeTools, TOOL_DESCRIPTORS } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { ECHO_NAME, echoDescriptor } from "../tools/echo-descriptor.js";
import { drawn, type Pi, startPi, tempDir, textOf, toolResults } from "./helpers.js";

const open: Pi[] = [];
after(async () => {
  for (const p of open) await p.close();
});

async function pi(...args: Parameters<typeof startPi>): Promise<Pi> {
  const p = await startPi(...args);
  open.push(p);
  assert.deepEqual(p.loadErrors, []);
  return p;
}

const json = (v: unknown) => JSON.parse(JSON.stringify(v));

test("the extension registers exactly the descriptors' tools, as describeTools() describes them", async () => {
  const cwd = await tempDir("nbagent-pi-descriptors-");
  const bare = await pi(cwd, []);
  const builtIn = new Set(bare.runtime.session.getAllTools().map((t) => t.name));
  const withUs = await pi(cwd, [], [], [createNbagentExtension()]);
  const ours = withUs.runtime.session.getAllTools().filter((t) => !builtIn.has(t.name));
  assert.deepEqual(
    ours.map((t) => t.name),
    TOOL_DESCRIPTORS.map((d) => d.name),
  );
  const described = describeTools({ settings: testSettings() });
  for (const [k, t] of ours.entries()) {
    assert.equal(t.description, described[k].description, t.name);
    assert.deepEqual(json(t.parameters), json(described[k].parameters), t.name);
    assert.equal(withUs.runtime.session.getToolDefinition(t.name)?.label, described[k].label);
  }
});

test("a descriptor only the test knows is registered, called by the model and drawn by pi", async () => {
  const cwd = await tempDir("nbagent-pi-echo-");
  const descriptors = [...TOOL_DESCRIPTORS, echoDescriptor];
  const p = await pi(
    cwd,
    [],
    [
      fauxAssistantMessage(fauxToolCall(ECHO_NAME, { text: "hi" }), { stopReason: "toolUse" }),
      fauxAssistantMessage(fauxText("done")),
    ],
    [createNbagentExtension({ descriptors, runtime: { maxSessions: 3 } })],
  );
  const echo = p.runtime.session.getAllTools().find((t) => t.name === ECHO_NAME);
  assert.equal(echo?.description, "Echoes text back (test only; 3 kernels kept).");
  await p.runtime.session.prompt("Say hi through the echo tool.");
  const [result] = toolResults(p);
  assert.equal(result.isError, false);
  assert.equal(textOf(result), "echo: hi");
  // Drawn by the plain view (no view is registered for it): pi's row, one column of padding.
  assert.deepEqual(drawn(p.rows.get(result.toolCallId)), [" echo_test text=hi", " │ echo: hi"]);
});
