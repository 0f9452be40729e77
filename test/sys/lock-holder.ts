/**
 * Child process for the lock-file tests: takes the lock at argv[2], writes "held" to stdout, and
 * on a line "release" on stdin releases it, writes "released" and exits. The parent may instead
 * SIGKILL it while it holds the lock.
 */
import { createInterface } from "node:readline";
import { acquireLockFile } from "../../src/sys/lock-file.js";

const held = await acquireLockFile(process.argv[2], { timeoutMs: 600_000 });
process.stdout.write("held\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "release") {
    held.release();
    process.stdout.write("released\n");
    process.exit(0);
  }
}
