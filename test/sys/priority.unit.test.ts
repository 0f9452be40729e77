/**
 * Lowering a process's own priority (src/sys/priority.ts) on real processes: every thread it has,
 * and the threads it starts later, run at the nice value asked; a thread already nicer stays so.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { parseProcStat } from "../../src/sys/proc.js";
import { threadNices } from "./thread-nices.js";

const PRIORITY = new URL("../../src/sys/priority.ts", import.meta.url).href;

/**
 * A node process with a worker thread running before it lowers itself (`before`, run first), which
 * answers with lowerOwnPriority's value and then starts a second worker; it waits on stdin.
 */
async function lowered(before: string, nice: number) {
  const script = `
    const { Worker } = require("node:worker_threads");
    const os = require("node:os");
    const keep = "setInterval(() => {}, 1000)";
    new Worker(keep, { eval: true }).once("online", async () => {
      ${before}
      const { lowerOwnPriority } = await import(${JSON.stringify(PRIORITY)});
      const result = lowerOwnPriority(${nice});
      const later = new Worker(keep, { eval: true });
      later.once("online", () => console.log(JSON.stringify({ result })));
    });
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ["--import", "tsx", "-e", script], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
  return { child, answer: JSON.parse(line) as { result: { nice: number; threads: number; failed: number } } };
}

test("every thread of the process runs at the nice value asked, and the threads it starts afterwards too", async (t) => {
  const { child, answer } = await lowered("", 10);
  t.after(() => child.kill("SIGKILL"));
  const nices = threadNices(child.pid!);
  assert.ok(nices.size >= 3, `a main thread and two workers at least (${nices.size})`);
  assert.deepEqual([...new Set(nices.values())], [10], JSON.stringify([...nices]));
  assert.equal(answer.result.nice, 10);
  assert.equal(answer.result.failed, 0);
  assert.ok(answer.result.threads >= 2);
  // The process as a whole (its main thread, what ps shows) too.
  assert.equal(parseProcStat(readFileSync(`/proc/${child.pid}/stat`, "latin1"))?.nice, 10);
});

test("a thread already nicer than asked is left as it is (lowering never raises a priority)", async (t) => {
  const { child, answer } = await lowered("os.setPriority(0, 15);", 10);
  t.after(() => child.kill("SIGKILL"));
  const main = threadNices(child.pid!).get(child.pid!);
  assert.equal(main, 15);
  assert.equal(answer.result.nice, 15);
  assert.ok([...threadNices(child.pid!).values()].every((n) => n >= 10));
});
