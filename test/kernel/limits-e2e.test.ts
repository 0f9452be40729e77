// Per-kernel limits end to end (docs/isolation.md, "Limits"): the CLI's flags reach a real kernel,
// whose init applies them (limits.py), and the model's text says when a limit ended the kernel.
// - `--max-processes 32`: code in the kernel that starts processes gets EAGAIN before 32 (bounded at
//   200 children, so a kernel without the limit cannot hurt the host: the test then fails);
// - `--memory-limit 128M`: code that touches 512 MiB kills the kernel, and the text names the limit;
// - no kernel cgroup of the CLI's process (named after its pid) is left behind once it has ended.
//   Other test files' kernels make and remove groups meanwhile, so only this process's are looked at.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { cliEntry } from "../cli.js";

/** Starts children (each waits on a pipe) until one cannot be started or 200 are; prints the tally. */
const FORKS = `
import os
r, w = os.pipe()
kids, err = [], None
for _ in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
print("started", len(kids), "errno", err)
`;

const HOG = `
pieces = []
for _ in range(64):
    pieces.append(b"x" * (8 << 20))
print("survived")
`;

function nbagentCall(
  code: string,
  flags: string[],
): { status: number | null; stdout: string; stderr: string; pid: number } {
  const state = mkdtempSync(join(tmpdir(), "nbagent-limits-state-"));
  return spawnSync(
    process.execPath,
    [...cliEntry(), "call", ...flags, "python", JSON.stringify({ cells: [{ code }] })],
    { env: { ...process.env, NBAGENT_STATE_DIR: state }, encoding: "utf8" },
  );
}

/** The kernel groups of host process `pid` under the cgroup hierarchies (none may outlive it). */
function kernelGroups(pid: number | undefined): string[] {
  const prefix = `nbagent-kernel-${pid}-`;
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: string[];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const name of entries) {
      if (name.startsWith(prefix)) found.push(join(dir, name));
      else if (name.startsWith("nbagent-")) continue;
      else if (depth < 4) walk(join(dir, name), depth + 1);
    }
  };
  walk("/sys/fs/cgroup", 0);
  return found;
}

describe("limits on a real kernel through the CLI", { concurrency: false }, () => {
  test("--max-processes 32: starting processes in the kernel fails with EAGAIN below the limit", () => {
    const r = nbagentCall(FORKS, ["--max-processes", "32"]);
    assert.equal(r.status, 0, r.stderr);
    const m = /started (\d+) errno (\w+)/.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.equal(m[2], "11", `no EAGAIN: ${r.stdout}`);
    assert.ok(Number(m[1]) < 32, r.stdout);
    // As root the limit is a cgroup, which counts what it refused: the model is told what happened.
    if (process.getuid?.() === 0)
      assert.match(
        r.stdout,
        /Cell 1 reached the kernel's limit of 32 processes and threads: \d+ starts? of a process or thread (was|were) refused .*The kernel keeps running\./,
      );
    assert.ok(r.pid, "the CLI ran");
    assert.deepEqual(kernelGroups(r.pid), []);
  });

  test("a death after the limit refused starts in an earlier cell is not blamed on the limit", () => {
    const state = mkdtempSync(join(tmpdir(), "nbagent-limits-state-"));
    const cells = [{ code: FORKS }, { code: "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)" }];
    const r = spawnSync(
      process.execPath,
      [...cliEntry(), "call", "--max-processes", "32", "python", JSON.stringify({ cells })],
      { env: { ...process.env, NBAGENT_STATE_DIR: state }, encoding: "utf8" },
    );
    assert.match(
      r.stdout,
      /The kernel died while cell 2 ran \(kernel process ended: signal SIGTERM\)\. It was restarted/,
    );
    assert.doesNotMatch(r.stdout, /died[^\n]*hit its limit/, r.stdout);
    if (process.getuid?.() === 0) assert.match(r.stdout, /Cell 1 reached the kernel's limit of 32 processes/);
  });

  test("--memory-limit 128M: a kernel that touches 512 MiB is killed and the text says it hit its limit", () => {
    const r = nbagentCall(HOG, ["--memory-limit", "128M"]);
    assert.ok(!r.stdout.includes("survived"), r.stdout);
    assert.match(
      r.stdout,
      /The kernel died while cell 1 ran \([^)]*\): it hit its memory limit of 128 MiB and the out-of-memory killer ended it/,
    );
    assert.ok(r.pid, "the CLI ran");
    assert.deepEqual(kernelGroups(r.pid), []);
  });
});
