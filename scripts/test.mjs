#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's own test runner (through tsx), files in parallel.
// Usage: node scripts/test.mjs [substring…]  — only files whose path contains one of the substrings.
// Every temp file the tests (and their kernels) make goes into one directory per run (TMPDIR), removed
// at the end, so runs leave nothing behind; NBAGENT_KEEP_TEST_TMP=1 keeps it for a post-mortem.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "fixtures") collect(p, out);
    } else if (name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = collect("test")
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
// A test that hangs fails after this long instead of holding the whole run (and CI) until its limit.
// Node applies it to each file as a whole too: it must exceed the slowest file's run (~3 min).
const timeoutMs = process.env.NBAGENT_TEST_TIMEOUT_MS ?? "600000";
const concurrency = process.env.NBAGENT_TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
const runTmp = mkdtempSync(join(tmpdir(), "nbagent-test-run-"));
const cleanUp = () => {
  if (process.env.NBAGENT_KEEP_TEST_TMP === "1") console.error(`test temp files kept in ${runTmp}`);
  else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
};
const child = spawn(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, `--test-timeout=${timeoutMs}`, ...files],
  { stdio: "inherit", env: { ...process.env, TMPDIR: runTmp } },
);
// Ctrl-C reaches the test processes through the terminal; the runner waits for them, then cleans up.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
child.on("exit", (code, signal) => {
  cleanUp();
  process.exit(signal ? 1 : (code ?? 1));
});
