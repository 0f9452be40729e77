#!/usr/bin/env node
// Copies non-TypeScript runtime assets (the kernel prelude, the kernel fork server) next to the compiled code.
// A copy that would change nothing is skipped, and a changed one is written beside and renamed into
// place: kernels starting meanwhile (tests rebuild while others run) read the whole file, old or new.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { dirname } from "node:path";

for (const [from, to] of [
  ["src/runtime/prelude.py", "dist/runtime/prelude.py"],
  ["src/kernel/local/forkserver.py", "dist/kernel/local/forkserver.py"],
  ["src/kernel/local/endkernel.py", "dist/kernel/local/endkernel.py"],
  // The nbformat schemas' licence: the validators compiled from them ship in dist.
  ["src/notebook/schema/LICENSE.md", "dist/notebook/schema/LICENSE.md"],
  ["src/kernel/local/pidns.py", "dist/kernel/local/pidns.py"],
  ["src/kernel/local/limits.py", "dist/kernel/local/limits.py"],
]) {
  if (!existsSync(from)) continue;
  if (existsSync(to) && readFileSync(from).equals(readFileSync(to))) continue;
  mkdirSync(dirname(to), { recursive: true });
  const part = `${to}.${process.pid}.part`;
  copyFileSync(from, part);
  renameSync(part, to);
}
