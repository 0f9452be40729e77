/**
 * A session's record (runtime/session-record.ts) written through one descriptor kept open: every
 * entry is in the file, as one whole line, when append returns; a file removed underneath (pruned
 * by another process) is made again with its folder; two writers of one named record (two
 * processes) never tear each other's lines; SessionRecords hands one object per session, keeps a
 * bounded number of descriptors open and closes them all on dispose. (A record after its process
 * is SIGKILLed mid-call: test/run/record-crash.stress.test.ts.)
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { type RecordEntry, SessionRecord, SessionRecords } from "../../src/runtime/session-record.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-record-"));
after(() => rmSync(root, { recursive: true, force: true }));

const cell = (source: string, text = `${source}\n`): RecordEntry => ({
  type: "cell",
  at: new Date().toISOString(),
  source,
  execution_count: 1,
  outputs: [{ output_type: "stream", name: "stdout", text }],
});

/** This process's open descriptors on files under `dir`. */
function openUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      /* closed meanwhile (readdir's own descriptor) */
    }
  }
  return out;
}

test("each entry is one whole line in the file when append returns; read gives them back in order", async () => {
  const path = join(root, "a", "sessions", "s", "records", "python-1.jsonl");
  const record = new SessionRecord(path, true);
  assert.equal(record.isEmpty(), true);
  assert.equal(existsSync(dirname(path)), false, "nothing made before the first entry");
  for (const source of ["x = 1", "print(x)", "y = 2"]) {
    const appended = record.append(cell(source));
    // Written synchronously: in the file before the promise is even awaited.
    const lines = readFileSync(path, "utf8").split("\n");
    assert.equal(JSON.parse(lines.at(-2) as string).source, source);
    assert.equal(lines.at(-1), "", "the entry ends its line");
    await appended;
  }
  assert.equal(record.isEmpty(), false);
  assert.deepEqual(
    (await record.read()).map((e) => (e.type === "cell" ? e.source : e.type)),
    ["x = 1", "print(x)", "y = 2"],
  );
  record.close();
});

test("a record whose file (and folder) was removed underneath is made again at the next append", async () => {
  const dir = join(root, "b", "records");
  const path = join(dir, "named-1.jsonl");
  const record = new SessionRecord(path, false);
  await record.append(cell("before"));
  rmSync(dirname(dir), { recursive: true });
  assert.equal(record.isEmpty(), true, "a removed file holds nothing, though its descriptor is open");
  await record.append(cell("after"));
  assert.deepEqual(
    (await record.read()).map((e) => (e.type === "cell" ? e.source : "")),
    ["after"],
  );
  assert.equal(new SessionRecord(path, false).isEmpty(), false);
  record.close();
});

test("two writers of one named record (two processes) append whole lines, none torn", async () => {
  const path = join(root, "c", "records", "named-2.jsonl");
  const one = new SessionRecord(path, false);
  const two = new SessionRecord(path, false);
  const big = "x".repeat(200_000);
  for (let i = 0; i < 20; i++) {
    await one.append(cell(`one ${i}`, big));
    await two.append(cell(`two ${i}`, big));
  }
  const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
  assert.equal(lines.length, 40);
  for (const line of lines)
    assert.equal((JSON.parse(line) as { outputs: { text: string }[] }).outputs[0].text, big);
  assert.equal((await two.read()).length, 40);
  one.close();
  two.close();
});

test("SessionRecords: one record per session, at most 16 descriptors open, all closed and removed on dispose", async () => {
  const stateRoot = join(root, "d");
  const records = new SessionRecords(stateRoot);
  const first = records.python("s0", "/work");
  assert.equal(records.python("s0", "/work"), first, "the same object (and descriptor) for every call");
  assert.notEqual(records.python("s0", "/elsewhere"), first);
  assert.equal(records.named("n"), records.named("n"));
  const all = Array.from({ length: 20 }, (_, i) => records.python(`s${i}`, "/work"));
  for (const r of all) await r.append(cell("1"));
  assert.equal(openUnder(stateRoot).length, 16, "the least recently opened are closed past 16");
  // A closed record opens again when written to.
  await all[0].append(cell("2"));
  assert.equal((await all[0].read()).length, 2);
  assert.equal(openUnder(stateRoot).length, 16);

  const perCall = records.perCall("s0");
  await perCall.append(cell("3"));
  assert.ok(existsSync(perCall.path));
  await records.discard(perCall);
  assert.equal(existsSync(perCall.path), false);

  const named = records.named("kept");
  await named.append(cell("4"));
  await records.dispose();
  assert.deepEqual(openUnder(stateRoot), [], "no descriptor left open");
  for (const r of all) assert.equal(existsSync(r.path), false, "in-process records go with their process");
  assert.equal(existsSync(named.path), true, "a named session's record stays");
});
