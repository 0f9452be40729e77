#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's own test runner (through tsx), files in parallel.
// Usage: node scripts/test.mjs [substring…]  — only files whose path contains one of the substrings.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
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
const concurrency = process.env.NBAGENT_TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
const child = spawn(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, ...files],
  { stdio: "inherit" },
);
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
