/**
 * The save lock under stress (docs/notebook-tool.md, "Files"): many real node processes take the
 * same lock over and over while holders die holding it (SIGKILL from inside the critical section)
 * and workers are SIGKILLed at random moments from outside (mid-acquisition, mid-takeover). Each
 * holder logs enter / middle / exit lines to one append-only log; no two holders' spans may
 * overlap in it. Stale locks of the killed holders must be taken over (the run makes progress),
 * and what the takeovers leave is swept.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { withFileLock } from "../../src/notebook/lock.js";
import { sweepLeftovers } from "../../src/notebook/sweep.js";
import { tempDir } from "./helpers.js";

const WORKER = new URL("./lock-worker.ts", import.meta.url).pathname;
const WORKERS = 12;
const ACQUISITIONS = 1_000;
/** Share of critical sections whose holder kills itself inside. */
const DIE_INSIDE = 0.2;

interface Span {
  key: string;
  first: number;
  last: number;
  exited: boolean;
}

function spans(log: string): Span[] {
  const byKey = new Map<string, Span>();
  log
    .split("\n")
    .filter(Boolean)
    .forEach((l, i) => {
      const [tag, pid, n] = l.split(" ");
      const key = `${pid}/${n}`;
      const s = byKey.get(key);
      if (!s) byKey.set(key, { key, first: i, last: i, exited: tag === "X" });
      else {
        s.last = i;
        s.exited ||= tag === "X";
      }
    });
  return [...byKey.values()].sort((a, b) => a.first - b.first);
}

test(`lock stress: ${WORKERS} processes, holders killed at random, no two holders at once in ≥ ${ACQUISITIONS} acquisitions`, async () => {
  const dir = await tempDir();
  const file = join(dir, "nb.ipynb");
  const log = join(dir, "log");
  await writeFile(file, "{}");
  await writeFile(log, "");
  const live = new Set<ChildProcess>();
  let stopping = false;
  let killedOutside = 0;
  let diedInside = 0;
  const start = () => {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER, file, log, String(DIE_INSIDE)], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    live.add(child);
    child.on("exit", (_code, signal) => {
      live.delete(child);
      if (signal === "SIGKILL" && !stopping && !child.killed) diedInside++;
      if (!stopping) start();
    });
  };
  for (let i = 0; i < WORKERS; i++) start();

  let entered = 0;
  while (entered < ACQUISITIONS) {
    // A random worker killed at a random moment, about once a second (each restart costs a node start).
    await new Promise((r) => setTimeout(r, 200 + Math.random() * 1000));
    const victims = [...live];
    const victim = victims[Math.floor(Math.random() * victims.length)];
    if (victim && Math.random() < 0.3) {
      victim.kill("SIGKILL");
      killedOutside++;
    }
    entered = (await readFile(log, "utf8")).split("\n").filter((l) => l.startsWith("E ")).length;
  }
  stopping = true;
  await Promise.all(
    [...live].map((c) => {
      const gone = new Promise((r) => c.once("exit", r));
      c.kill("SIGKILL");
      return gone;
    }),
  );

  const all = spans(await readFile(log, "utf8"));
  const overlaps: string[] = [];
  let prev: Span | undefined;
  for (const s of all) {
    if (prev && s.first < prev.last) overlaps.push(`${s.key} entered while ${prev.key} was inside`);
    if (!prev || s.last > prev.last) prev = s;
  }
  const completed = all.filter((s) => s.exited).length;
  console.log(
    `acquisitions ${all.length} (completed ${completed}), holders died inside ${diedInside}, workers killed from outside ${killedOutside}, overlaps ${overlaps.length}`,
  );
  assert.ok(all.length >= ACQUISITIONS);
  assert.ok(diedInside > 0, "some holders died holding the lock");
  assert.deepEqual(overlaps, [], "never two holders at once");

  // Whatever the dead left (a stale lock, takeover debris) does not stop the next holder, and the
  // sweep removes the debris.
  let ran = false;
  await withFileLock(file, async () => {
    ran = true;
  });
  assert.ok(ran);
  await sweepLeftovers(file, true);
  assert.deepEqual((await readdir(dir)).sort(), ["log", "nb.ipynb"]);
});
