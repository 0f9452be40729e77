/**
 * The artifact loop through the CLI, as a person or agent uses it: `nbagent call python` spills a
 * long output, and a separate `nbagent artifact <id>` process pages through every line of it from
 * the same state directory (NBAGENT_STATE_DIR, honoured by both).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { type Json, nbagent, tempDir } from "./helpers.js";

test("call python spills to an artifact that `nbagent artifact` pages through; bad ids exit 1", async () => {
  const state = await tempDir("nbagent-state-");
  const env = { NBAGENT_STATE_DIR: state };
  const params = JSON.stringify({ cells: [{ code: "for i in range(20000): print('line', i)" }] });
  const call = await nbagent(["call", "python", params, "--json"], { env });
  assert.equal(call.code, 0, call.stderr);
  const result: Json = JSON.parse(call.stdout);
  const output = result.details.cells?.[0]?.output ?? result.details.output;
  assert.equal(output.truncated, true);
  const id: string = output.artifactId;
  assert.ok(id && existsSync(`${state}/sessions`), "the artifact lives under NBAGENT_STATE_DIR");
  assert.ok(result.content[0].text.includes(`artifact://${id}`));

  const page = await nbagent(["artifact", `artifact://${id}`, "--offset", "101", "--limit", "3"], { env });
  assert.equal(page.code, 0, page.stderr);
  assert.equal(page.stdout, "line 100\nline 101\nline 102\n");
  const last = await nbagent(["artifact", id, "--offset", "20000"], { env });
  assert.equal(last.stdout, "line 19999\n");

  const missing = await nbagent(["artifact", "artifact://nope"], { env });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /Artifact not found/);
  const elsewhere = await nbagent(["artifact", id], { env: { NBAGENT_STATE_DIR: await tempDir() } });
  assert.equal(elsewhere.code, 1, "another state directory does not have it");
});
