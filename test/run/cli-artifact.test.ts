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

test("`nbagent artifact` pages through a 300 KB single line to the end: every byte once, then past the end is an error", async () => {
  const state = await tempDir("nbagent-state-");
  const env = { NBAGENT_STATE_DIR: state };
  // a long line of multi-byte characters between short lines, as a minified JSON print would make
  const code = "print('head')\nprint('ab€' * 60000)\nfor i in range(50): print('tail', i)";
  const call = await nbagent(["call", "python", JSON.stringify({ cells: [{ code }] }), "--json"], { env });
  assert.equal(call.code, 0, call.stderr);
  const id = /artifact:\/\/([\w-]+)/.exec(JSON.parse(call.stdout).content[0].text)?.[1] ?? "";
  const expected = `head\n${"ab€".repeat(60000)}\n${Array.from({ length: 50 }, (_, i) => `tail ${i}\n`).join("")}`;
  const whole = await nbagent(["artifact", id], { env });
  assert.equal(whole.stdout, expected, "the artifact holds the whole output");

  let args: string[] | undefined = ["artifact", id, "--offset", "1"];
  let got = "";
  const seen = new Set<string>();
  let cutNotes = 0;
  while (args) {
    const page = await nbagent(args, { env });
    assert.equal(page.code, 0, page.stderr);
    got += page.stdout;
    if (/^\(line 2 continues: \d+ more of its 300000 bytes\)$/m.test(page.stderr)) cutNotes++;
    const next = /^Next: nbagent (artifact .+)$/m.exec(page.stderr);
    args = next?.[1].split(" ");
    if (next) {
      assert.ok(!seen.has(next[1]), `the hint advances: ${next[1]}`);
      seen.add(next[1]);
    }
    assert.ok(seen.size < 20, "paging ends");
  }
  assert.equal(got, expected, "the pages are the artifact, every byte exactly once");
  assert.ok(cutNotes >= 5, "the pages inside the long line say how much of it is left");

  const past = await nbagent(["artifact", id, "--offset", "53"], { env });
  assert.equal(past.code, 1);
  assert.equal(past.stdout, "");
  assert.match(
    past.stderr,
    /^Error: --offset 53 is past the end: .* has 52 lines; it ends after \d+ bytes\.$/m,
  );
  const column = await nbagent(["artifact", id, "--offset", "1", "--column", "5"], { env });
  assert.equal(column.code, 1);
  assert.match(column.stderr, /^Error: --column 5 is past the end of line 1, which has 4 bytes\.$/m);
});
