// Per-kernel limits end to end (docs/isolation.md, "Limits"): the CLI's flags reach a real kernel,
// whose init applies them (limits.py), and the model's text says when a limit ended the kernel.
// - `--max-processes 32`: code in the kernel that starts processes gets EAGAIN before 32 (bounded at
//   200 children, so a kernel without the limit cannot hurt the host: the test then fails);
// - `--memory-limit 128M`: code that touches 512 MiB kills the kernel, and the text names the limit;
// - no kernel cgroup of the CLI's process (named after its pid) is left behind once it has ended.
//   Other test files' kernels make and remove groups meanwhile, so only this process's are looked at.
//   An empty group left by a host that has ended is removed when the next kernel's are (as root);
//   a live host's stays.
// - `--cpus 0.5`, as root and as nobody (test/security/harness.ts runs the built CLI as either): a
//   CPU-bound loop in the kernel is throttled, by the counters of the kernel's own cpu group (its
//   cpu.stat nr_throttled and throttled time; no clock), and nobody, who has no writable cgroup, is
//   told by doctor that the CPU limit is not in force; every kernel sees `ulimit -n` 4096;
// - `--sandbox`: /tmp and /dev/shm are tmpfs of half the memory limit (else an eighth of the RAM), a
//   cell that writes past /tmp's size fails with "No space left on device" in its text, and the host
//   answers the next call with the same kernel;
// - bad --cpus values and --cpus with a gateway: an Error: and nothing started.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { OPEN_FILES, tmpfsBytes } from "../../src/kernel/local/limit-values.js";
import { LIMITS_ON_GATEWAY } from "../../src/runtime/kernel-provider.js";
import { bytesIec } from "../../src/sys/units.js";
import { cliEntry } from "../cli.js";
import { asWho, nbagent, newPlace, PRINCIPALS, setUp, withHost } from "../security/harness.js";

setUp();

/**
 * Spins until the kernel's own cpu group (found by its cgroup.procs, not by /proc/self/cgroup, whose
 * paths a cgroup namespace would make relative) counts a throttled period, or 4000 rounds of ~5 ms
 * of work have run; prints the quota, the counters and the share of a CPU the loop got.
 */
const SPIN = `
import os
def group():
    for root, dirs, files in os.walk("/sys/fs/cgroup"):
        for d in [d for d in dirs if d.startswith("nbagent-")]:
            path = os.path.join(root, d)
            try:
                procs = open(path + "/cgroup.procs").read().split()
            except OSError:
                continue
            if str(os.getpid()) in procs and ("cpu.max" in os.listdir(path) or "cpu.cfs_quota_us" in os.listdir(path)):
                return path
g = group()
if g is None:
    print("cpu group: none")
else:
    quota = open(g + "/cpu.max").read().split() if os.path.exists(g + "/cpu.max") else [open(g + "/cpu.cfs_quota_us").read().strip(), open(g + "/cpu.cfs_period_us").read().strip()]
    def stat():
        return dict((l.split()[0], int(l.split()[1])) for l in open(g + "/cpu.stat") if l.strip())
    import time
    cpu0, wall0 = time.process_time(), time.monotonic()
    for _ in range(4000):
        if stat().get("nr_throttled", 0) > 0:
            break
        sum(i * i for i in range(20000))
    s = stat()
    share = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    print("cpu group quota", " ".join(quota), "nr_throttled", s.get("nr_throttled"), "throttled", s.get("throttled_time", s.get("throttled_usec")), "share %.2f" % share)
`;

const ULIMIT = `import subprocess
print(subprocess.run(["sh", "-c", "echo nofile $(ulimit -Sn) $(ulimit -Hn)"], capture_output=True, text=True).stdout)`;

const SIZES = `import os, tempfile
size = lambda p: os.statvfs(p).f_blocks * os.statvfs(p).f_frsize
print("tmp", tempfile.gettempdir(), size(tempfile.gettempdir()), "shm", size("/dev/shm"))`;

const FILL_TMP = `import tempfile, os
with open(os.path.join(tempfile.gettempdir(), "fill"), "wb") as f:
    for _ in range(100000):
        f.write(b"x" * (1 << 20))
        f.flush()
print("never full")`;

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

  test("an empty kernel group of a host that has ended is removed at the next kernel's cleanup; a live host's stays", (t) => {
    if (process.getuid?.() !== 0) return t.skip("a plain user has no cgroup to make groups in");
    // Where this machine puts a limited kernel's groups: the kernel names its own.
    const where = nbagentCall(
      "import os\nfor root, dirs, _ in os.walk('/sys/fs/cgroup'):\n" +
        "    for d in dirs:\n" +
        "        if d.startswith('nbagent-') and os.path.exists(os.path.join(root, d, 'cgroup.procs')) and str(os.getpid()) in open(os.path.join(root, d, 'cgroup.procs')).read().split():\n" +
        "            print('parent', root)",
      ["--max-processes", "32"],
    );
    const parents = [...where.stdout.matchAll(/^parent (\S+)$/gm)].map((m) => m[1]);
    if (parents.length === 0) return t.skip(`no kernel cgroup on this machine: ${where.stdout}`);
    // A pid no process has: a child that has exited (and was reaped).
    const dead = spawnSync("true").pid!;
    const orphan = join(parents[0], `nbagent-kernel-${dead}-left-behind`);
    const live = join(parents[0], `nbagent-kernel-${process.pid}-still-running`);
    mkdirSync(orphan);
    mkdirSync(live);
    try {
      const r = nbagentCall("print('ok')", ["--max-processes", "32"]);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(existsSync(orphan), false, "the ended host's empty group was removed");
      assert.equal(existsSync(live), true, "a live host's group stays");
    } finally {
      for (const d of [orphan, live]) if (existsSync(d)) rmdirSync(d);
    }
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

describe("CPU, open files and the sandbox's tmpfs through the CLI", { concurrency: false }, () => {
  for (const who of PRINCIPALS) {
    test(`--cpus 0.5 ${asWho(who)}: a CPU-bound loop is throttled by the cgroup (or the limit is said to be missing)`, async (t) => {
      const place = newPlace(who);
      await withHost(place, ["--cpus", "0.5"], {}, async (host) => {
        const a = await host.python(SPIN);
        assert.equal(a.isError, false, a.text);
        if (who === "nobody") {
          // No writable cgroup: no CPU limit, and no rlimit pretending to be one.
          assert.match(a.text, /cpu group: none/);
        } else {
          const m = /cpu group quota 50000 100000 nr_throttled (\d+) throttled (\d+) share ([\d.]+)/.exec(
            a.text,
          );
          assert.ok(m, a.text);
          // Throttled; or the loaded machine never gave the kernel more than its half CPU, so the
          // quota had nothing to cut (without throttling, no period can have used more than half,
          // so the share over the loop is at most 0.5; a quota not applied shows ~1 on an idle core).
          if (Number(m[1]) === 0) {
            assert.ok(Number(m[3]) <= 0.55, a.text);
            t.diagnostic(
              `not throttled: the machine gave the kernel ${m[3]} of a CPU (load), so the quota could not be shown at work`,
            );
          } else assert.ok(Number(m[2]) > 0, a.text);
        }
        const u = await host.python(ULIMIT);
        assert.match(u.text, new RegExp(`nofile ${OPEN_FILES} ${OPEN_FILES}`));
      });
      const doctor = await nbagent(place, ["doctor", "--cpus", "0.5"]);
      const line = doctor.stdout.split("\n").find((l) => / limits: /.test(l)) ?? doctor.stdout;
      if (who === "nobody")
        assert.match(
          line,
          /^warn limits: not in force here: 0\.5 CPUs per kernel; .* — .*no CPU limit without a cpu cgroup \(RLIMIT_CPU counts total seconds, not a rate\)/,
        );
      else
        assert.match(
          line,
          /^ok {3}limits: each kernel: at most 1,024 processes and threads \(cgroup v[12]\), no memory limit \(.*\), at most 0\.5 CPUs \(cgroup v[12]\), at most 4,096 open files per process \(rlimit\), \/dev\/shm and the sandbox's \/tmp: /,
        );
    });

    test(`--sandbox --memory-limit 256M ${asWho(who)}: a full /tmp is a cell error, and the host answers the next call`, async () => {
      const place = newPlace(who);
      await withHost(place, ["--sandbox", "--memory-limit", "256M"], {}, async (host) => {
        const sizes = await host.python(SIZES);
        assert.match(sizes.text, new RegExp(`tmp \\S+ ${128 * 2 ** 20} shm ${128 * 2 ** 20}`));
        const full = await host.python(FILL_TMP);
        assert.equal(full.isError, true, full.text);
        assert.doesNotMatch(full.text, /^never full$/m);
        assert.match(full.text, /OSError: \[Errno 28\] No space left on device/);
        assert.match(full.text, /Cell 1 failed: OSError: \[Errno 28\] No space left on device\./);
        // The same kernel, still there: its variables and its full /tmp.
        const next = await host.python(
          "import os, tempfile\nprint(6 * 7, os.path.getsize(os.path.join(tempfile.gettempdir(), 'fill')) >> 20)",
        );
        assert.equal(next.isError, false, next.text);
        assert.match(next.text, /^42 12[0-8]$/m);
        const u = await host.python(ULIMIT);
        assert.match(u.text, new RegExp(`nofile ${OPEN_FILES} ${OPEN_FILES}`));
      });
    });
  }

  for (const who of PRINCIPALS.filter((w) => w !== "user")) {
    test(`a full working directory ${asWho(who)}: ENOSPC in the cell, and the host answers the next call`, async () => {
      // A small disk of its own as the cwd (a tmpfs mounted by root; the host's disk is never filled).
      const place = newPlace(who);
      const uid = who === "nobody" ? 65534 : 0;
      execFileSync("mount", [
        "-t",
        "tmpfs",
        "-o",
        `size=8m,mode=0700,uid=${uid},gid=${uid}`,
        "tmpfs",
        place.cwd,
      ]);
      try {
        await withHost(place, [], {}, async (host) => {
          const full = await host.python(
            'with open("fill", "wb") as f:\n    for _ in range(1000):\n        f.write(b"x" * (1 << 20))\n        f.flush()\nprint("never full")',
          );
          assert.equal(full.isError, true, full.text);
          assert.doesNotMatch(full.text, /^never full$/m);
          assert.match(full.text, /Cell 1 failed: OSError: \[Errno 28\] No space left on device\./);
          const next = await host.python("import os\nos.remove('fill')\nprint(6 * 7)");
          assert.equal(next.isError, false, next.text);
          assert.match(next.text, /^42$/m);
        });
      } finally {
        execFileSync("umount", ["-l", place.cwd]);
      }
    });
  }

  test("--sandbox without a memory limit: /tmp and /dev/shm are an eighth of the RAM each, not half", async () => {
    const place = newPlace(PRINCIPALS[0]);
    await withHost(place, ["--sandbox"], {}, async (host) => {
      const sizes = await host.python(SIZES);
      const want = tmpfsBytes(0);
      assert.match(
        sizes.text,
        new RegExp(`tmp \\S+ ${want} shm ${want}`),
        `${bytesIec(want)}: ${sizes.text}`,
      );
    });
  });

  test("bad --cpus values and NBAGENT_CPUS: one Error: line, exit 2, nothing started", async () => {
    const place = newPlace(PRINCIPALS[0]);
    for (const [args, env, text] of [
      [["--cpus", "lots"], {}, 'Error: --cpus must be a number of CPUs like 1.5 or 2, or off; got "lots"'],
      [
        ["--cpus=0.001"],
        {},
        "Error: --cpus 0.001 is too small: a cgroup gives at least 0.01 CPUs (1 ms in every 100 ms); give at least 0.01 (or off)",
      ],
      [
        [],
        { NBAGENT_CPUS: "-2" },
        'Error: NBAGENT_CPUS must be a number of CPUs like 1.5 or 2, or off; got "-2"',
      ],
    ] as [string[], Record<string, string>, string][]) {
      const r = await nbagent(
        place,
        ["call", ...args, "python", JSON.stringify({ cells: [{ code: "print('ran')" }] })],
        env,
      );
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assert.ok(r.stderr.includes(text), r.stderr);
      assert.doesNotMatch(r.stdout, /ran/);
    }
    assert.deepEqual(
      readdirSync(place.state).filter((f) => f === "kernels"),
      [],
    );
  });

  test("--cpus with a gateway is refused like the other limits", async () => {
    const place = newPlace(PRINCIPALS[0]);
    const r = await nbagent(place, [
      "call",
      "--cpus",
      "1",
      "--gateway",
      "http://127.0.0.1:9",
      "python",
      JSON.stringify({ cells: [{ code: "print('ran')" }] }),
    ]);
    assert.ok(
      `${r.stdout}${r.stderr}`.includes(`Error: could not start the Python kernel: ${LIMITS_ON_GATEWAY}`),
      `${r.stdout}${r.stderr}`,
    );
    assert.doesNotMatch(r.stdout, /ran/);
  });
});
