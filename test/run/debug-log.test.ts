/**
 * The debug log (docs/reliability.md, "The debug log"): with NBAGENT_LOG=FILE, `nbagent run -j 2`
 * of three notebooks writes each kernel's start (asked, launched — forked through the fork server
 * after the first —, ready, with timings) and its stop as JSON lines, and nothing of the kernels'
 * environment. Without it, no file.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { nbagent, tempDir, writeNb } from "./helpers.js";

test("NBAGENT_LOG: each kernel's start, fork and stop as JSON lines, no environment values", async () => {
  const dir = await tempDir();
  const inputs = [];
  for (const name of ["a", "b", "c"])
    inputs.push(await writeNb(join(dir, `${name}.ipynb`), [["code", `print("${name}")`]]));
  const log = join(dir, "debug.jsonl");
  const secret = "sk-debuglogsecret0123456789abcdef";
  const r = await nbagent(["run", "-j", "2", "--quiet", "--inplace", ...inputs], {
    cwd: dir,
    env: { NBAGENT_LOG: log, NBAGENT_TEST_DEBUG_SECRET: secret },
  });
  assert.equal(r.code, 0, r.stderr);
  const text = readFileSync(log, "utf8");
  assert.ok(!text.includes(secret), "no environment values in the log");
  const events = text
    .trim()
    .split("\n")
    .map(
      (l) => JSON.parse(l) as { event: string; pid?: number; host: number; ms: number; [k: string]: unknown },
    );
  for (const e of events) assert.equal(typeof e.ms, "number");
  const named = (name: string) => events.filter((e) => e.event === name);
  assert.equal(named("kernel-start").length, 3, text);
  const ready = named("kernel-start-ready");
  assert.equal(ready.length, 3, text);
  for (const e of ready) {
    assert.equal(e.backend, "local");
    assert.equal(typeof e.readyMs, "number");
    assert.ok((e.readyMs as number) >= (e.launchedMs as number));
  }
  // Every kernel that became ready was stopped at the end, by its pid.
  const stopped = new Set(named("kernel-stopped").map((e) => e.pid));
  for (const e of ready) assert.ok(stopped.has(e.pid), `stopped: ${e.pid}`);
  // Kernels after the first fork from the fork server: each request has its reply, with the pid it made.
  const requests = named("fork-request");
  const replies = named("fork-reply");
  assert.ok(requests.length >= 1, text);
  assert.deepEqual(replies.map((e) => e.id).sort(), requests.map((e) => e.id).sort());
  const forkedPids = new Set(replies.map((e) => e.pid));
  assert.ok(
    ready.some((e) => forkedPids.has((e.launchedPid ?? e.pid) as number)),
    "a forked kernel's start is logged by the pid the fork server gave",
  );

  // Without NBAGENT_LOG nothing is written.
  const r2 = await nbagent(["run", "--quiet", "--inplace", inputs[0]!], { cwd: dir });
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(readFileSync(log, "utf8"), text);
});

test("NBAGENT_LOG at a link or a FIFO a kernel planted: not followed, never blocks, the run goes on", async () => {
  const dir = await tempDir();
  const nb = await writeNb(join(dir, "a.ipynb"), [["code", "print(1)"]]);
  const victim = join(dir, "victim.txt");
  writeFileSync(victim, "untouched\n");
  const link = join(dir, "log-link.jsonl");
  symlinkSync(victim, link);
  const fifo = join(dir, "log-fifo.jsonl");
  execFileSync("mkfifo", [fifo]);
  for (const log of [link, fifo]) {
    const r = await nbagent(["run", "--quiet", "--inplace", nb], { cwd: dir, env: { NBAGENT_LOG: log } });
    assert.equal(r.code, 0, r.stderr);
  }
  assert.equal(readFileSync(victim, "utf8"), "untouched\n");
});
