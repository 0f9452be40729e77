// X7: the kernel (and anything it started) dies with its host — normal exit, SIGINT, SIGTERM and
// SIGKILL of the host all leave no process behind. Checked by pid and by process group.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { groupMembers, pidAlive, waitUntil } from "./helpers.js";

const HOST = fileURLToPath(new URL("./fixtures/host.ts", import.meta.url));

async function startHost(mode: "wait" | "exit") {
  const host = spawn(process.execPath, ["--import", "tsx", HOST, mode], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  host.stderr.on("data", (d) => {
    err += d;
  });
  const pids = await new Promise<{ kernel: number; child: number }>((resolve, reject) => {
    host.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
    });
    host.once("exit", (code) => reject(new Error(`host exited (${code}) before reporting: ${err}`)));
  });
  return { host, ...pids };
}

async function assertAllGone(kernel: number, child: number) {
  const gone = await waitUntil(
    () => !pidAlive(kernel) && !pidAlive(child) && groupMembers(kernel).length === 0,
    5000,
  );
  assert.ok(
    gone,
    `left behind: kernel ${pidAlive(kernel)}, child ${pidAlive(child)}, group ${groupMembers(kernel)}`,
  );
}

for (const signal of ["SIGKILL", "SIGTERM", "SIGINT"] as const) {
  test(`${signal} of the host leaves no kernel process`, async () => {
    const { host, kernel, child } = await startHost("wait");
    assert.ok(pidAlive(kernel) && pidAlive(child));
    assert.ok(groupMembers(kernel).length >= 3, "kernel, watchdog and the subprocess share a group");
    host.kill(signal);
    await assertAllGone(kernel, child);
  });
}

test("process.exit() of the host leaves no kernel process", async () => {
  const { kernel, child } = await startHost("exit");
  await assertAllGone(kernel, child);
});
