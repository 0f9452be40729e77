// No orphans: the kernel (and anything it started) dies with its host — normal exit, SIGINT, SIGTERM and
// SIGKILL of the host all leave no process behind. Checked by pid and by process group.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { childrenOf, groupMembers, pidAlive, waitUntil } from "./helpers.js";

const HOST = fileURLToPath(new URL("./fixtures/host.ts", import.meta.url));

async function startHost(mode: "wait" | "exit" | "dispose") {
  const host = spawn(process.execPath, ["--import", "tsx", HOST, mode], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  host.stderr.on("data", (d) => {
    err += d;
  });
  const pids = await new Promise<{ kernel: number; child: number; children: number[]; relay?: number }>(
    (resolve, reject) => {
      host.stdout.on("data", (d) => {
        out += d;
        if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
      });
      host.once("exit", (code) => reject(new Error(`host exited (${code}) before reporting: ${err}`)));
    },
  );
  return { host, ...pids };
}

async function assertAllGone(kernel: number, others: number[]) {
  const alive = () => [kernel, ...others].filter(pidAlive);
  const gone = await waitUntil(() => alive().length === 0 && groupMembers(kernel).length === 0, 5000);
  assert.ok(gone, `left behind: ${alive()}, group ${groupMembers(kernel)}`);
}

/**
 * The kernel's children: the user's subprocess and the watchdog (in a group of its own); with a PID
 * namespace (docs/isolation.md) the watchdog is the relay above the kernel, so only the subprocess.
 */
function checkChildren(kernel: number, child: number, children: number[], relay?: number): void {
  assert.deepEqual([...children].sort(), [...childrenOf(kernel)].sort());
  assert.ok(children.includes(child));
  if (relay !== undefined) {
    assert.deepEqual(children, [child]);
    assert.deepEqual(childrenOf(relay), [kernel], "the relay's only child is the kernel");
    assert.ok(groupMembers(kernel).includes(child), "the subprocess is in the kernel's group");
    return;
  }
  const watchdog = children.filter((p) => p !== child);
  assert.equal(watchdog.length, 1, "one watchdog");
  assert.deepEqual(groupMembers(watchdog[0]), watchdog, "the watchdog has a group of its own");
  assert.ok(groupMembers(kernel).includes(child), "the subprocess is in the kernel's group");
}

describe("the kernel dies with its host", { concurrency: true }, () => {
  for (const signal of ["SIGKILL", "SIGTERM", "SIGINT"] as const) {
    test(`${signal} of the host leaves no kernel process`, async () => {
      const { host, kernel, child, children, relay } = await startHost("wait");
      checkChildren(kernel, child, children, relay);
      host.kill(signal);
      await assertAllGone(kernel, relay ? [...children, relay] : children);
    });
  }

  test("process.exit() of the host leaves no kernel process", async () => {
    const { kernel, children, relay } = await startHost("exit");
    await assertAllGone(kernel, relay ? [...children, relay] : children);
  });

  test("after backend.dispose() the host exits by itself (no open handles) and nothing is left", async () => {
    const { host, kernel, children, relay } = await startHost("dispose");
    const code = await new Promise<number | null>((resolve) => {
      if (host.exitCode !== null) resolve(host.exitCode);
      else host.once("exit", resolve);
    });
    assert.equal(code, 0);
    await assertAllGone(kernel, relay ? [...children, relay] : children);
  });
});
