#!/usr/bin/env node
// Copies non-TypeScript runtime assets (the kernel prelude, the kernel fork server) next to the compiled code.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

for (const [from, to] of [
  ["src/runtime/prelude.py", "dist/runtime/prelude.py"],
  ["src/kernel/local/forkserver.py", "dist/kernel/local/forkserver.py"],
  ["src/kernel/local/pidns.py", "dist/kernel/local/pidns.py"],
]) {
  if (!existsSync(from)) continue;
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}
