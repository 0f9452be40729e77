#!/usr/bin/env node
// node test/lifeline.mjs COMMAND [ARG…]
//
// Runs COMMAND in a process group of its own and ends that group when the process that started this
// one goes away, however it went (even SIGKILL): its stdin must be a pipe whose other end only that
// process holds. End of that pipe, or SIGTERM/SIGINT/SIGHUP here, sends SIGTERM to the group, then
// SIGKILL after NBAGENT_LIFELINE_GRACE_MS (default 15 s). When COMMAND exits, what is left of its group
// is sent SIGTERM, and this process exits with COMMAND's status. COMMAND's stdin is /dev/null; its
// stdout and stderr are this process's.
//
// The test runner starts the test processes and the shared jupyter_server this way, and test helpers
// start their own servers this way, so a killed runner or test leaves no server behind.
import { spawn } from "node:child_process";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node test/lifeline.mjs COMMAND [ARG…]");
  process.exit(2);
}
const graceMs = Number(process.env.NBAGENT_LIFELINE_GRACE_MS ?? 15_000);
const child = spawn(command, args, { detached: true, stdio: ["ignore", "inherit", "inherit"] });
const group = child.pid;

function signalGroup(signal) {
  try {
    process.kill(-group, signal);
  } catch {
    // the group is gone
  }
}

let ending = false;
function end(signal = "SIGTERM") {
  if (ending) return;
  ending = true;
  signalGroup(signal);
  setTimeout(() => signalGroup("SIGKILL"), graceMs).unref();
}

child.on("error", (err) => {
  console.error(`lifeline: ${command}: ${err.message}`);
  process.exit(127);
});
child.on("exit", (code, signal) => {
  signalGroup("SIGTERM");
  process.exit(code ?? (signal ? 128 + (signalNumber(signal) ?? 1) : 1));
});

process.stdin.on("data", () => {});
process.stdin.on("end", () => end());
process.stdin.on("error", () => end());
process.stdin.on("close", () => end());
for (const s of ["SIGTERM", "SIGINT", "SIGHUP"])
  process.on(s, () => end(s === "SIGINT" ? "SIGINT" : "SIGTERM"));

function signalNumber(name) {
  return { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }[name];
}
