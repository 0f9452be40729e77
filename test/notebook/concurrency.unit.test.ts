/**
 * No lost update: two real node processes insert cells into the same notebook at the same time.
 * Every insert either lands (and is in the final file exactly once) or gets the conflict Error.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { Oracle, readJson, tempDir, writeNotebook } from "./helpers.js";

const WORKER = new URL("./edit-worker.ts", import.meta.url).pathname;

interface Attempt {
  content: string;
  ok: boolean;
  text: string;
}

function startWorker(path: string, name: string, count: number) {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, path, name, String(count)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const attempts: Attempt[] = [];
  let onReady: () => void;
  const ready = new Promise<void>((r) => {
    onReady = r;
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line === "ready") onReady();
    else attempts.push(JSON.parse(line) as Attempt);
  });
  const done = new Promise<number | null>((r) => child.on("close", r));
  return { child, attempts, ready, done };
}

test("two processes editing one notebook: no update is silently lost", async () => {
  const dir = await tempDir();
  const path = await writeNotebook(join(dir, "shared.ipynb"), [{ source: "start" }]);
  const N = 40;
  const workers = [startWorker(path, "A", N), startWorker(path, "B", N)];
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.child.stdin.end("go\n");
  const codes = await Promise.all(workers.map((w) => w.done));
  assert.deepEqual(codes, [0, 0]);

  const attempts = workers.flatMap((w) => w.attempts);
  assert.equal(attempts.length, 2 * N);
  const landed = attempts.filter((a) => a.ok).map((a) => a.content);
  const refused = attempts.filter((a) => !a.ok);
  for (const r of refused)
    assert.match(r.text, /^Error: Notebook (changed on disk since it was read|is busy)/);
  const sources = (await readJson(path)).cells.map((c: { source: string[] }) => c.source.join(""));
  assert.deepEqual(
    [...sources].sort(),
    [...landed, "start"].sort(),
    "exactly the successful inserts are in the file",
  );
  for (const w of workers)
    assert.ok(
      w.attempts.some((a) => a.ok),
      "each process got some edits in",
    );
  const oracle = new Oracle();
  try {
    const v = await oracle.check(path);
    assert.ok(v.valid, v.error ?? "");
  } finally {
    oracle.close();
  }
  const leftovers = (await readdir(dir)).filter((n) => n !== "shared.ipynb");
  assert.deepEqual(leftovers, [], "no temp or lock files left behind");
  console.log(`landed ${landed.length}, refused ${refused.length}`);
});
