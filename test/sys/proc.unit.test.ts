/** Process liveness and /proc/<pid>/stat parsing (src/sys/proc.ts) on real processes. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp, symlink } from "node:fs/promises";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { ownStartTime, parseProcStat, processAlive, readProcStat } from "../../src/sys/proc.js";

test("this process's /proc entry parses: running, its start time, CPU time", () => {
  const stat = readProcStat(process.pid);
  assert.ok(stat);
  assert.equal(stat.state, "R");
  assert.match(stat.startTime, /^\d+$/);
  assert.equal(stat.startTime, ownStartTime());
  assert.ok(stat.utimeTicks + stat.stimeTicks >= 0);
  assert.equal(stat.comm, readFileSync("/proc/self/comm", "utf8").trim());
  assert.equal(stat.nice, getPriority(), "field 19, the nice value");
  assert.equal(processAlive(process.pid), true);
  assert.equal(processAlive(process.pid, stat.startTime), true);
  assert.equal(processAlive(process.pid, `${stat.startTime}0`), false, "another start time: another process");
});

test("a command name with spaces and parentheses does not shift the fields", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-sys-proc-"));
  const name = "a) Z 1 (b c)";
  await symlink("/bin/cat", join(dir, name));
  const child = spawn(join(dir, name), [], { stdio: "pipe" });
  t.after(() => child.kill("SIGKILL"));
  await once(child, "spawn");
  const pid = child.pid!;
  const stat = readProcStat(pid);
  assert.ok(stat);
  assert.equal(stat.comm, name);
  assert.notEqual(stat.state, "Z");
  assert.equal(stat.ppid, process.pid);
  assert.match(stat.startTime, /^\d+$/);
  assert.equal(processAlive(pid, stat.startTime), true);
  assert.deepEqual(
    parseProcStat(`42 (${name}) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20`),
    { comm: name, state: "S", ppid: 1, utimeTicks: 11, stimeTicks: 12, nice: 16, startTime: "987654" },
  );
  assert.equal(parseProcStat("garbage"), undefined);
});

test("a process that has exited and been reaped is dead", async () => {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "spawn");
  const pid = child.pid!;
  await once(child, "exit");
  assert.equal(processAlive(pid), false);
  assert.equal(readProcStat(pid), undefined);
  assert.equal(processAlive(0), false);
  assert.equal(processAlive(-1), false);
});

test("a zombie (exited, not yet reaped by its parent) is dead although kill(0) reaches it", async (t) => {
  // The parent forks a child that exits at once, waits until it is a zombie without reaping it
  // (WNOWAIT), prints its pid, and keeps it so until stdin closes.
  const script = [
    "import os, sys",
    "pid = os.fork()",
    "if pid == 0: os._exit(0)",
    "os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)",
    "print(pid, flush=True)",
    "sys.stdin.read()",
  ].join("\n");
  const parent = spawn("/usr/bin/python3", ["-c", script], { stdio: "pipe" });
  t.after(() => parent.kill("SIGKILL"));
  const first = await createInterface({ input: parent.stdout })[Symbol.asyncIterator]().next();
  const zombie = Number(first.value);
  process.kill(zombie, 0); // exists
  assert.equal(readProcStat(zombie)?.state, "Z");
  assert.equal(processAlive(zombie), false);
});
