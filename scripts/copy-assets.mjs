#!/usr/bin/env node
// Copies non-TypeScript runtime assets (the kernel prelude, the kernel fork server) next to the compiled code.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

for (const [from, to] of [
  ["src/runtime/prelude.py", "dist/runtime/prelude.py"],
  ["src/kernel/local/forkserver.py", "dist/kernel/local/forkserver.py"],
  // The nbformat schemas' licence: the validators compiled from them ship in dist.
  ["src/notebook/schema/LICENSE.md", "dist/notebook/schema/LICENSE.md"],
  ["src/kernel/local/pidns.py", "dist/kernel/local/pidns.py"],
  ["src/kernel/local/limits.py", "dist/kernel/local/limits.py"],
]) {
  if (!existsSync(from)) continue;
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}
