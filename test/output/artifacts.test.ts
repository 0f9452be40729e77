import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ArtifactStore, OutputSink, parseArtifactId } from "../../src/output/index.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-artifacts-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("ids resolve from artifact:// URIs in any store sharing the root", async () => {
  const a = new ArtifactStore({ root });
  const ref = a.create("session one");
  writeFileSync(ref.path, "x\n");
  assert.ok(ref.path.startsWith(a.artifactsDir("session one")));
  const other = new ArtifactStore({ root });
  assert.equal(other.resolve(ref.uri), ref.path);
  assert.equal(other.resolve(ref.id), ref.path);
  assert.equal(other.resolve("artifact://nope"), undefined);
  assert.equal(parseArtifactId("artifact://../etc/passwd"), undefined);
  await assert.rejects(other.read("artifact://missing"), /Artifact not found/);
});

test("read pages through lines with offset and limit", async () => {
  const store = new ArtifactStore({ root });
  const ref = store.create("s");
  const sink = new OutputSink({ maxBytes: 100, artifact: ref });
  for (let i = 1; i <= 1000; i++) sink.push(`line ${i}\n`);
  assert.equal(sink.end().artifactId, ref.id);
  const first = await store.read(ref.uri, { limit: 3 });
  assert.equal(first.text, "line 1\nline 2\nline 3\n");
  assert.deepEqual([first.startLine, first.endLine, first.hasMore], [1, 3, true]);
  const last = await store.read(ref.id, { offset: 999, limit: 10 });
  assert.equal(last.text, "line 999\nline 1000\n");
  assert.equal(last.hasMore, false);
  const capped = await store.read(ref.id, { offset: 10, limit: 100, maxBytes: 20 });
  assert.equal(capped.text, "line 10\nline 11\n");
  assert.equal(capped.hasMore, true);
});

test("a line longer than maxBytes is cut on a UTF-8 boundary", async () => {
  const store = new ArtifactStore({ root });
  const ref = store.create("s");
  writeFileSync(ref.path, `${"€".repeat(100)}\nnext\n`);
  const s = await store.read(ref.id, { maxBytes: 10 });
  assert.equal(s.text, "€€€");
  assert.equal(s.lineCut, true);
  assert.equal(s.hasMore, true);
});
