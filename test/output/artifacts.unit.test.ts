import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ArtifactStore, OutputSink, parseArtifactId } from "../../src/output/index.js";
import { createRuntime } from "../../src/runtime/runtime.js";
import { artifactMaxAgeFromEnv } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-artifacts-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("ids resolve from artifact:// URIs in any store sharing the root", async () => {
  const a = new ArtifactStore({ root });
  const ref = a.create("session one");
  writeFileSync(ref.path, "x\n");
  assert.ok(ref.path.startsWith(a.outputsDir("session one")), "the store writes in its own folder");
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
  assert.deepEqual([first.startLine, first.endLine, first.lines], [1, 3, 1000]);
  assert.deepEqual(first.next, { offset: 4 });
  const last = await store.read(ref.id, { offset: 999, limit: 10 });
  assert.equal(last.text, "line 999\nline 1000\n");
  assert.equal(last.next, undefined);
  const capped = await store.read(ref.id, { offset: 10, limit: 100, maxBytes: 20 });
  assert.equal(capped.text, "line 10\nline 11\n");
  assert.deepEqual(capped.next, { offset: 12 });
});

test("a line longer than maxBytes is cut on a UTF-8 boundary", async () => {
  const store = new ArtifactStore({ root });
  const ref = store.create("s");
  writeFileSync(ref.path, `${"€".repeat(100)}\nnext\n`);
  const s = await store.read(ref.id, { maxBytes: 10 });
  assert.equal(s.text, "€€€");
  assert.deepEqual(s.partial, [{ line: 1, lineBytes: 300, from: 1, to: 9 }]);
  assert.deepEqual(s.next, { offset: 1, column: 10 });
});

test("prune removes only the store's own artifacts past the age, in every session", async () => {
  const pruneRoot = mkdtempSync(join(tmpdir(), "nbagent-prune-"));
  try {
    const store = new ArtifactStore({ root: pruneRoot });
    const old = store.create("a");
    const fresh = store.create("a");
    const otherSession = store.create("b");
    mkdirSync(store.artifactsDir("a"));
    const userFile = join(store.artifactsDir("a"), "model-weights.log");
    // An artifact written before the store had its own folder: in the kernel's ARTIFACTS folder.
    const legacy = join(store.artifactsDir("a"), "lzz0-0123456789.log");
    for (const path of [old.path, fresh.path, otherSession.path, userFile, legacy])
      writeFileSync(path, "x\n");
    const eightDaysAgo = (Date.now() - 8 * 24 * 3600 * 1000) / 1000;
    for (const path of [old.path, otherSession.path, userFile, legacy])
      utimesSync(path, eightDaysAgo, eightDaysAgo);
    assert.equal(await store.prune(7 * 24 * 3600 * 1000), 3);
    assert.equal(existsSync(legacy), false, "an old-layout artifact goes too");
    assert.equal(existsSync(old.path), false);
    assert.equal(existsSync(otherSession.path), false);
    assert.equal(existsSync(fresh.path), true, "younger than the age");
    assert.equal(existsSync(userFile), true, "a file the user's code wrote is not the store's");
    assert.equal(existsSync(store.artifactsDir("a")), true, "directories stay (a kernel's ARTIFACTS)");
    assert.equal(existsSync(store.outputsDir("b")), true, "and the store's own");
    assert.equal(store.resolve(fresh.uri), fresh.path);
    assert.equal(await new ArtifactStore({ root: join(pruneRoot, "none") }).prune(0), 0, "no state yet");
  } finally {
    rmSync(pruneRoot, { recursive: true, force: true });
  }
});

test("runtimes prune at most every 10 minutes per age, across processes (the state folder's marker)", async () => {
  const pruneRoot = mkdtempSync(join(tmpdir(), "nbagent-prune-every-"));
  const old = (path: string) => {
    const tenDaysAgo = (Date.now() - 10 * 24 * 3600 * 1000) / 1000;
    utimesSync(path, tenDaysAgo, tenDaysAgo);
  };
  try {
    const first = new ArtifactStore({ root: pruneRoot }).create("s");
    writeFileSync(first.path, "x\n");
    old(first.path);
    const a = createRuntime({ stateRoot: pruneRoot, settings: testSettings({}) });
    assert.equal(await a.artifactsPruned, 1);
    // Another old artifact: a runtime made within 10 minutes with the same age leaves it …
    const second = new ArtifactStore({ root: pruneRoot }).create("s");
    writeFileSync(second.path, "x\n");
    old(second.path);
    const b = createRuntime({ stateRoot: pruneRoot, settings: testSettings({}) });
    assert.equal(await b.artifactsPruned, 0);
    assert.equal(existsSync(second.path), true);
    // … and once the last prune is older than that, the next runtime removes it.
    old(join(pruneRoot, `.pruned-${7 * 24 * 3600 * 1000}`));
    const c = createRuntime({ stateRoot: pruneRoot, settings: testSettings({}) });
    assert.equal(await c.artifactsPruned, 1);
    assert.equal(existsSync(second.path), false);
    await Promise.all([a, b, c].map((r) => r.dispose()));
  } finally {
    rmSync(pruneRoot, { recursive: true, force: true });
  }
});

test("a runtime prunes old artifacts when created; NBAGENT_ARTIFACT_DAYS sets the age, 0 keeps all", async () => {
  const pruneRoot = mkdtempSync(join(tmpdir(), "nbagent-prune-rt-"));
  try {
    const ref = new ArtifactStore({ root: pruneRoot }).create("s");
    writeFileSync(ref.path, "x\n");
    const twoDaysAgo = (Date.now() - 2 * 24 * 3600 * 1000) / 1000;
    utimesSync(ref.path, twoDaysAgo, twoDaysAgo);
    const keep = createRuntime({
      stateRoot: pruneRoot,
      settings: testSettings({ NBAGENT_ARTIFACT_DAYS: "0" }),
    });
    assert.equal(await keep.artifactsPruned, 0);
    const week = createRuntime({ stateRoot: pruneRoot, settings: testSettings({}) });
    assert.equal(await week.artifactsPruned, 0, "2 days old is within the default 7");
    const day = createRuntime({
      stateRoot: pruneRoot,
      settings: testSettings({ NBAGENT_ARTIFACT_DAYS: "1" }),
    });
    assert.equal(await day.artifactsPruned, 1);
    assert.equal(existsSync(ref.path), false);
    await Promise.all([keep, week, day].map((r) => r.dispose()));
    assert.equal(artifactMaxAgeFromEnv({ NBAGENT_ARTIFACT_DAYS: " " }), 7 * 24 * 3600 * 1000);
    assert.equal(artifactMaxAgeFromEnv({ NBAGENT_ARTIFACT_DAYS: "-2" }), 7 * 24 * 3600 * 1000);
    assert.equal(artifactMaxAgeFromEnv({ NBAGENT_ARTIFACT_DAYS: "0.5" }), 12 * 3600 * 1000);
  } finally {
    rmSync(pruneRoot, { recursive: true, force: true });
  }
});
