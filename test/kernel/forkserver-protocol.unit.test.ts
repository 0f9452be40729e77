// The host trusts no fork-server line it did not ask for (docs/isolation.md, "The fork server's
// channel"). A kernel can no longer write that channel (test/security/reach.stress.test.ts attacks it), so
// what a forged line would do is provoked here with a server that lies: a small Python program in
// the fork server's place, answering with the lines a kernel once forged. Each lie ends the server
// with the reason said, and no process the host did not see forked is ever signalled.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ForkServer } from "../../src/kernel/local/forkserver.js";
import type { KernelSpec } from "../../src/kernel/local/kernelspec.js";
import { TEST_PYTHON } from "../python.js";

const dir = mkdtempSync(join(tmpdir(), "nbagent-fs-protocol-"));
const victims: ChildProcess[] = [];
after(() => {
  for (const v of victims) if (v.pid) process.kill(-v.pid, "SIGKILL");
});

/** A process group of the test's own: what a forged line would have the host kill. */
function victim(): number {
  const child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
  victims.push(child);
  return child.pid!;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * An interpreter stand-in: reports ready, then answers each request with `answer(request)` (Python
 * expression text over `req`, giving one line or a list of lines).
 */
function lyingServer(answer: string): string {
  const program = `
import json, os, sys
print(json.dumps({"ready": os.getpid(), "python": sys.executable, "error": None}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    out = ${answer}
    for item in out if isinstance(out, list) else [out]:
        print(item if isinstance(item, str) else json.dumps(item), flush=True)
`;
  const script = join(dir, `server-${victims.length}-${Math.random().toString(36).slice(2)}.sh`);
  writeFileSync(script, `#!/bin/sh\nexec ${TEST_PYTHON} -c '${program.replaceAll("'", "'\\''")}'\n`);
  chmodSync(script, 0o755);
  return script;
}

const SPEC: KernelSpec = {
  name: "python3",
  argv: [TEST_PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
  displayName: "Python 3",
  language: "python",
  interruptMode: "signal",
  env: {},
  python: TEST_PYTHON,
};
const PLAN = { module: "ipykernel_launcher", args: ["-f", "{connection_file}"] };

async function lie(answer: string): Promise<{ launch: unknown; gone: string }> {
  const server = new ForkServer(lyingServer(answer), {});
  await server.whenReady();
  const launch = await server.launch(SPEC, PLAN, {}, { runtimeDir: join(dir, "kernels"), cwd: dir }).then(
    () => "launched",
    (err: Error) => err,
  );
  return { launch, gone: await server.gone };
}

for (const [name, answer] of [
  ["a reply naming a process the server did not fork", `{"id": req["id"], "pid": VICTIM}`],
  ["a reply naming pid 1", `{"id": req["id"], "pid": 1}`],
  ["a reply naming the server itself", `{"id": req["id"], "pid": os.getpid()}`],
  ["a reply to another request id", `{"id": req["id"] + 7, "pid": VICTIM}`],
  ["an exit of a process it did not fork", `{"exit": VICTIM, "signal": "SIGKILL"}`],
  ["an isolation report for a process it did not fork", `[{"isolation": 1, "info": {}}]`],
  ["a line that is not JSON", `"kill -9 VICTIM"`],
] as const) {
  test(`fork server protocol: ${name} stops the server and signals nothing`, async () => {
    const pid = victim();
    const { launch, gone } = await lie(answer.replaceAll("VICTIM", String(pid)));
    assert.notEqual(launch, "launched");
    assert.match(gone, /the fork server broke its protocol \(.+\) and was stopped/);
    assert.ok(alive(pid), `the victim (pid ${pid}) was killed`);
  });
}
