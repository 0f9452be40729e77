// Per-kernel limits (docs/isolation.md, "Limits"), with real processes, namespaces and cgroups:
// - limits.py's apply_limits, run as a kernel's init does (pid 1 of a PID namespace of its own, as
//   root; as an unprivileged user inside a user namespace), stops a real fork bomb at the process
//   limit (fork fails with EAGAIN, the host still starts processes), a memory hog at the memory
//   limit (killed by the out-of-memory killer with cgroups, MemoryError with rlimits) and a CPU spinner
//   at the CPU limit (the cpu group's own cpu.stat counts throttled periods; no clock is read); every
//   kernel gets the open-files limit and a sized /dev/shm, and without cgroups the CPU limit is
//   reported missing, never faked with an rlimit;
// - the host reads from the cgroups that a limit was hit, words it, and removes the groups;
// - the user's values are parsed, or refused with one Error: line.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { takeLimitFlags } from "../../src/cli/commands.js";
import { limitsCheck, probeLimitsLine } from "../../src/cli/doctor.js";
import {
  DEFAULT_MAX_PROCESSES,
  initLimits,
  OPEN_FILES,
  parseCpus,
  parseMaxProcesses,
  parseMemoryLimit,
  resolveLimits,
  tmpfsBytes,
} from "../../src/kernel/local/limit-values.js";
import {
  type AppliedLimits,
  ProcessRefusalReader,
  readLimitHit,
  readProcessRefusals,
  removeLimitCgroups,
} from "../../src/kernel/local/limits.js";
import { resolveSettings, type SettingsFlags } from "../../src/runtime/settings.js";
import { bytesIec } from "../../src/sys/units.js";
import { abortText, eventText } from "../../src/tools/kernel-text.js";
import { TEST_PYTHON } from "../python.js";

const PYTHON = TEST_PYTHON;
const LIMITS_PY = fileURLToPath(new URL("../../src/kernel/local/limits.py", import.meta.url));
const HARNESS = fileURLToPath(new URL("./fixtures/limits-harness.py", import.meta.url));
const SOURCE = `${readFileSync(LIMITS_PY, "utf8")}\n${readFileSync(HARNESS, "utf8")}`;
const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;
const EAGAIN = 11;
const MiB = 2 ** 20;

interface HarnessResult {
  applied: AppliedLimits;
  openFiles: [number, number];
  tmpfs: number;
  cpuStat?: Record<string, number>;
  cpuQuota?: string;
  forkErrno?: number;
  pidsCurrent?: number;
  skipped?: string;
  memhog?: string;
  kernelEnded?: "signal" | "exit";
  signal?: number;
  error?: string;
}

const made: AppliedLimits[] = [];
after(() => {
  for (const a of made) removeLimitCgroups(a);
});

/** Runs the harness (as `uid` when given) and resolves with its one JSON line. */
function harness(
  mode: "apply" | "forkbomb" | "memhog" | "cpuburn",
  limits: Record<string, number | null>,
  uid?: number,
): Promise<HarnessResult & { kernelId: string }> {
  const kernelId = `test-${randomBytes(6).toString("hex")}`;
  const args = ["-c", SOURCE, JSON.stringify({ limits, kernelId, mode })];
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, {
      cwd: "/",
      stdio: ["ignore", "pipe", "pipe"],
      ...(uid !== undefined ? { uid, gid: uid } : {}),
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      try {
        const result = JSON.parse(out.trim().split("\n").pop() ?? "") as HarnessResult;
        if (result.applied) made.push(result.applied);
        resolve({ ...result, kernelId });
      } catch {
        reject(new Error(`harness exited ${code}: ${out}${err}`));
      }
    });
  });
}

describe("limits.py under a real kernel init", { concurrency: false }, () => {
  test("nothing asked, nothing applied but the open-files limit and the tmpfs size", async () => {
    const r = await harness("apply", { maxProcesses: 0, memoryBytes: null });
    assert.equal(r.applied.via, "none");
    assert.deepEqual(r.applied.cgroups, {});
    assert.equal(r.applied.maxProcesses, null);
    assert.equal(r.applied.cpus, null);
    assert.equal(r.applied.reason, undefined);
    // Always: RLIMIT_NOFILE (soft and hard) in every process the init starts, and /dev/shm's size —
    // limits.py's default is the host's (an eighth of the RAM).
    assert.equal(r.applied.openFiles, OPEN_FILES);
    assert.deepEqual(r.openFiles, [OPEN_FILES, OPEN_FILES]);
    assert.equal(r.applied.tmpfsBytes, tmpfsBytes(0));
    assert.equal(r.tmpfs, tmpfsBytes(0));
  });

  test("what the host hands the init: the tmpfs size is half the memory limit, else an eighth of the RAM", async () => {
    const r = await harness("apply", { ...initLimits({ maxProcesses: 0, memoryBytes: 256 * MiB }) });
    assert.equal(r.applied.tmpfsBytes, 128 * MiB);
    assert.equal(r.tmpfs, 128 * MiB);
    assert.deepEqual(r.openFiles, [OPEN_FILES, OPEN_FILES]);
    assert.equal(tmpfsBytes(0, 24 * 2 ** 30), 3 * 2 ** 30);
    assert.equal(tmpfsBytes(0, 256 * MiB), 64 * MiB);
    assert.equal(tmpfsBytes(2 ** 30 + 3), 512 * MiB);
  });

  test("as root, a CPU spinner is throttled at the cgroup's CPU limit (its own cpu.stat says so)", async () => {
    assert.ok(ROOT, "these tests run as root (the CI box): cgroups are writable there");
    const r = await harness("cpuburn", { cpus: 0.5, maxProcesses: 64 });
    assert.match(r.applied.cpusVia ?? "", /^cgroup-v[12]$/, JSON.stringify(r.applied));
    assert.equal(r.applied.cpus, 0.5);
    const dir = r.applied.cgroups.cpu;
    assert.ok(dir?.endsWith(`/nbagent-${r.kernelId}`), dir);
    assert.equal(r.cpuQuota, "50000 100000");
    // Counted by the kernel's scheduler: periods in which the group ran out of its quota.
    assert.ok((r.cpuStat?.nr_throttled ?? 0) > 0, JSON.stringify(r.cpuStat));
    assert.ok((r.cpuStat?.throttled_time ?? r.cpuStat?.throttled_usec ?? 0) > 0, JSON.stringify(r.cpuStat));
    assert.deepEqual(removeLimitCgroups(r.applied), []);
    assert.equal(existsSync(dir ?? ""), false);
  });

  test("as root, a fork bomb stops at the cgroup's process limit and the host carries on", async () => {
    assert.ok(ROOT, "these tests run as root (the CI box): cgroups are writable there");
    const r = await harness("forkbomb", { maxProcesses: 32 });
    assert.equal(r.skipped, undefined, `the bomb did not run: ${r.skipped}`);
    assert.match(r.applied.via, /^cgroup-v[12]$/);
    assert.equal(r.applied.maxProcesses, 32);
    const dir = r.applied.cgroups.pids;
    assert.ok(dir?.endsWith(`/nbagent-${r.kernelId}`), dir);
    assert.equal(r.forkErrno, EAGAIN);
    assert.ok(r.pidsCurrent !== undefined && r.pidsCurrent <= 32, `${r.pidsCurrent} processes`);
    const hit = readLimitHit(r.applied);
    assert.equal(hit?.kind, "process-limit");
    assert.ok(
      hit.kind === "process-limit" && hit.maxProcesses === 32 && hit.refused > 0,
      JSON.stringify(hit),
    );
    // The kept descriptor (read at each execution's start and end) reads what a fresh open reads,
    // again and again; the group is removed with it open, and then it reads as a missing group does.
    const reader = new ProcessRefusalReader();
    const counted = readProcessRefusals(r.applied);
    assert.ok(counted && counted.refused > 0, JSON.stringify(counted));
    assert.deepEqual(reader.read(r.applied), counted);
    assert.deepEqual(reader.read(r.applied), counted);
    assert.deepEqual(removeLimitCgroups(r.applied), []);
    assert.equal(existsSync(dir ?? ""), false);
    assert.deepEqual(reader.read(r.applied), readProcessRefusals(r.applied));
    assert.deepEqual(reader.read(r.applied), { maxProcesses: 32, refused: 0 });
    reader.close();
    // The host is fine: it still starts processes.
    assert.equal(spawnSync("/bin/sh", ["-c", "exit 7"]).status, 7);
  });

  test("as root, a memory hog is killed at the cgroup's memory limit and the death says so", async () => {
    const r = await harness("memhog", { memoryBytes: 96 * MiB });
    assert.match(r.applied.memoryVia ?? "", /^cgroup-v[12]$/);
    assert.equal(r.applied.memoryBytes, 96 * MiB);
    assert.equal(r.memhog, undefined, "the hog finished instead of being stopped");
    assert.equal(r.kernelEnded, "signal");
    assert.equal(r.signal, 9);
    const hit = readLimitHit(r.applied);
    assert.deepEqual(hit && { kind: hit.kind, limit: "limitBytes" in hit && hit.limitBytes }, {
      kind: "memory-limit",
      limit: 96 * MiB,
    });
    const text = abortText(
      { kind: "kernel-died", reason: "kernel process ended: signal SIGKILL", limit: hit },
      "cell 2",
      false,
    );
    assert.match(
      text,
      /^Cell 2 did not finish: the kernel died \(kernel process ended: signal SIGKILL\): it hit its memory limit of 96 MiB and the out-of-memory killer ended it\. Use less memory at once /,
    );
    assert.deepEqual(removeLimitCgroups(r.applied), []);
    assert.equal(existsSync(r.applied.cgroups.memory ?? ""), false);
  });

  test("unprivileged (a user namespace, cgroups not writable): rlimits stop the fork bomb and the hog", async () => {
    const bomb = await harness("forkbomb", { maxProcesses: 32 }, NOBODY);
    assert.equal(bomb.applied.processesVia, "rlimit", JSON.stringify(bomb.applied));
    assert.equal(bomb.skipped, undefined, `the bomb did not run: ${bomb.skipped}`);
    assert.equal(bomb.forkErrno, EAGAIN);
    assert.match(
      bomb.applied.reason ?? "",
      /RLIMIT_NPROC counts this user's processes in the kernel's user namespace/,
    );
    assert.equal(spawnSync("/bin/sh", ["-c", "exit 7"]).status, 7);

    const hog = await harness("memhog", { memoryBytes: 96 * MiB }, NOBODY);
    assert.equal(hog.applied.memoryVia, "rlimit");
    assert.equal(hog.memhog, "MemoryError");
    assert.equal(hog.kernelEnded, "exit");
    assert.match(hog.applied.reason ?? "", /RLIMIT_DATA limits each process on its own/);
    // rlimits leave no cgroup to read: the kernel's own MemoryError says what happened.
    assert.equal(readLimitHit(hog.applied), undefined);
    assert.deepEqual(removeLimitCgroups(hog.applied), []);
  });

  test("unprivileged: no CPU limit without a cgroup (said, not faked), the open-files limit holds", async () => {
    const r = await harness("apply", { ...initLimits({ maxProcesses: 64, cpus: 0.5 }) }, NOBODY);
    assert.equal(r.applied.cpus, null);
    assert.equal(r.applied.cpusVia, null);
    assert.equal(r.applied.cgroups.cpu, undefined);
    assert.match(
      r.applied.cpusReason ?? "",
      /no CPU limit without a cpu cgroup \(RLIMIT_CPU counts total seconds, not a rate\)$/,
    );
    assert.ok(r.applied.reason?.includes(r.applied.cpusReason ?? "-"), r.applied.reason);
    assert.deepEqual(r.openFiles, [OPEN_FILES, OPEN_FILES]);
    assert.equal(r.tmpfs, tmpfsBytes(0));
    // The process limit is unaffected by the CPU limit it could not have.
    assert.equal(r.applied.processesVia, "rlimit");
  });
});

describe("the user's limits", () => {
  test("sizes: units are powers of 1024; off means none", () => {
    assert.equal(parseMemoryLimit("2G"), 2 * 2 ** 30);
    assert.equal(parseMemoryLimit("512M"), 512 * MiB);
    assert.equal(parseMemoryLimit("1.5GiB"), 1.5 * 2 ** 30);
    assert.equal(parseMemoryLimit("800mb"), 800 * MiB);
    assert.equal(parseMemoryLimit(" 1073741824 "), 2 ** 30);
    assert.equal(parseMemoryLimit("off"), 0);
    assert.equal(parseMemoryLimit("0"), 0);
  });

  test("bad sizes and counts get one Error: line naming where they came from", () => {
    assert.throws(() => parseMemoryLimit("lots"), {
      message: /^--memory-limit must be a size like 2G, 512M or 1073741824 \(bytes\), or off; got "lots"$/,
    });
    assert.throws(() => parseMemoryLimit("-1G"), { message: /^--memory-limit must be a size/ });
    assert.throws(() => parseMemoryLimit("10M"), {
      message: /^--memory-limit 10M is too small: .*at least 64M \(or off\)$/,
    });
    assert.throws(() => parseMaxProcesses("many"), {
      message: /^--max-processes must be a whole number of processes like 256, or off; got "many"$/,
    });
    assert.throws(() => parseMaxProcesses("2.5"), {
      message: /^--max-processes must be a whole number/,
    });
    assert.throws(() => parseMaxProcesses("4"), {
      message: /^--max-processes 4 is too small: .*at least 16 \(or off\)$/,
    });
    assert.throws(() => resolveLimits({}, { NBAGENT_MEMORY_LIMIT: "big" }), {
      message: /^NBAGENT_MEMORY_LIMIT must be a size/,
    });
  });

  test("CPUs: a number of CPUs, at least 0.01; off means none", () => {
    assert.equal(parseCpus("1.5"), 1.5);
    assert.equal(parseCpus("2"), 2);
    assert.equal(parseCpus(" 0.5 "), 0.5);
    assert.equal(parseCpus(".25"), 0.25);
    assert.equal(parseCpus("0.01"), 0.01);
    assert.equal(parseCpus("off"), 0);
    assert.equal(parseCpus("0"), 0);
    assert.equal(parseCpus("none"), 0);
    assert.throws(() => parseCpus("two"), {
      message: /^--cpus must be a number of CPUs like 1.5 or 2, or off; got "two"$/,
    });
    for (const bad of ["-1", "1,5", "1.5x", "", "0.0", "1e3", "Infinity"])
      assert.throws(() => parseCpus(bad), { message: /^--cpus must be a number of CPUs/ }, bad);
    assert.throws(() => parseCpus("0.005"), {
      message:
        /^--cpus 0.005 is too small: a cgroup gives at least 0.01 CPUs \(1 ms in every 100 ms\); give at least 0.01 \(or off\)$/,
    });
    assert.throws(() => resolveLimits({}, { NBAGENT_CPUS: "fast" }), {
      message: /^NBAGENT_CPUS must be a number of CPUs like 1.5 or 2, or off; got "fast"$/,
    });
  });

  test("a flag wins over the environment, which wins over the defaults", () => {
    assert.deepEqual(resolveLimits({}, {}), { maxProcesses: DEFAULT_MAX_PROCESSES, memoryBytes: 0, cpus: 0 });
    assert.deepEqual(
      resolveLimits({}, { NBAGENT_MAX_PROCESSES: "64", NBAGENT_MEMORY_LIMIT: "1G", NBAGENT_CPUS: "1.5" }),
      { maxProcesses: 64, memoryBytes: 2 ** 30, cpus: 1.5 },
    );
    assert.deepEqual(
      resolveLimits(
        { maxProcesses: "off", memoryLimit: "2G", cpus: "off" },
        { NBAGENT_MAX_PROCESSES: "64", NBAGENT_MEMORY_LIMIT: "1G", NBAGENT_CPUS: "1" },
      ),
      { maxProcesses: 0, memoryBytes: 2 * 2 ** 30, cpus: 0 },
    );
    assert.deepEqual(resolveLimits({}, { NBAGENT_MAX_PROCESSES: " " }).maxProcesses, DEFAULT_MAX_PROCESSES);
  });
});

describe("death texts", () => {
  test("a kernel killed at its memory limit, restarted", () => {
    const text = eventText(
      {
        kind: "died-during-code",
        reason: "kernel process ended: signal SIGKILL",
        restarted: true,
        limit: { kind: "memory-limit", limitBytes: 2 * 2 ** 30, oomKills: 1 },
      },
      "this call",
      "session",
    );
    assert.equal(
      text,
      "The kernel died while this call ran (kernel process ended: signal SIGKILL): it hit its memory limit of 2 GiB and the out-of-memory killer ended it. It was restarted: all state is gone (variables, imports), and this call was not run again; its effects up to the crash may have happened. Use less memory at once (load or process the data in smaller pieces, `del` large objects you no longer need), or ask the user to raise the limit (`--memory-limit` or NBAGENT_MEMORY_LIMIT).",
    );
  });

  test("a kernel that had hit its process limit", () => {
    const text = abortText(
      {
        kind: "kernel-died",
        reason: "kernel process ended: signal SIGSEGV",
        limit: { kind: "process-limit", maxProcesses: 1024, refused: 3 },
      },
      "cell 4",
      false,
    );
    assert.equal(
      text,
      "Cell 4 did not finish: the kernel died (kernel process ended: signal SIGSEGV); it had hit its limit of 1,024 processes and threads: 3 starts of a process or thread were refused. Start fewer processes or threads (a smaller pool, fewer workers), or ask the user to raise the limit (`--max-processes` or NBAGENT_MAX_PROCESSES).",
    );
  });

  test("no limit known: the reason alone, as before", () => {
    assert.equal(
      abortText({ kind: "kernel-died", reason: "kernel process ended: exit code 1" }, "cell 1", false),
      "Cell 1 did not finish: the kernel died (kernel process ended: exit code 1).",
    );
  });
});

describe("the flags", () => {
  test("--max-processes, --memory-limit and --cpus become the settings' flags, which win over the variables", () => {
    const flags: SettingsFlags = {};
    const r = takeLimitFlags(
      "call",
      ["python", "--max-processes", "64", "--memory-limit=2G", "--cpus", "1.5", "{}", "--", "--cpus"],
      flags,
    );
    assert.deepEqual(r, { args: ["python", "{}", "--", "--cpus"] });
    assert.deepEqual(flags, { maxProcesses: "64", memoryLimit: "2G", cpus: "1.5" });
    const settings = resolveSettings(flags, {
      NBAGENT_MAX_PROCESSES: "128",
      NBAGENT_MEMORY_LIMIT: "1G",
      NBAGENT_CPUS: "3",
    });
    assert.deepEqual(settings.limits, { maxProcesses: 64, memoryBytes: 2 * 2 ** 30, cpus: 1.5 });
    assert.equal(settings.limitsAsked, true);
    assert.equal(resolveSettings({}, {}).limitsAsked, false);
    // A CPU limit alone is asked for too (refused with a gateway like the others).
    assert.equal(resolveSettings({}, { NBAGENT_CPUS: "2" }).limitsAsked, true);
    assert.equal(resolveSettings({ cpus: "off" }, {}).limitsAsked, true);
  });

  test("bad values, a missing value, or a command without kernels: an error and nothing set", () => {
    const flags: SettingsFlags = {};
    assert.deepEqual(takeLimitFlags("mcp", ["--max-processes"], flags), {
      error: "--max-processes needs a value",
    });
    assert.match(
      (takeLimitFlags("artifact", ["--max-processes", "64"], flags) as { error: string }).error,
      /^--max-processes applies to call, batch, mcp, demo, python, notebook, run, doctor, not to artifact$/,
    );
    assert.deepEqual(flags, {});
    // The values are checked once, with the environment's, when the settings are resolved.
    assert.deepEqual(takeLimitFlags("mcp", ["--memory-limit", "2X"], flags), { args: [] });
    assert.throws(() => resolveSettings(flags, {}), {
      name: "SettingsError",
      message: '--memory-limit must be a size like 2G, 512M or 1073741824 (bytes), or off; got "2X"',
    });
    assert.throws(() => resolveSettings({}, { NBAGENT_MAX_PROCESSES: "lots" }), {
      name: "SettingsError",
      message: 'NBAGENT_MAX_PROCESSES must be a whole number of processes like 256, or off; got "lots"',
    });
    assert.deepEqual(takeLimitFlags("doctor", ["--cpus"], {}), { error: "--cpus needs a value" });
    assert.match(
      (takeLimitFlags("sessions", ["--cpus=1"], {}) as { error: string }).error,
      /^--cpus applies to call, batch, mcp, demo, python, notebook, run, doctor, not to sessions$/,
    );
    assert.throws(() => resolveSettings({ cpus: "1.5 cores" }, {}), {
      name: "SettingsError",
      message: '--cpus must be a number of CPUs like 1.5 or 2, or off; got "1.5 cores"',
    });
  });
});

describe("doctor's limits line", () => {
  const EACH = `at most 4,096 open files per process \\(rlimit\\), /dev/shm and the sandbox's /tmp: `;

  test("a real probe here: the mechanism and the limits in force, and no group left behind", async () => {
    const asked = { maxProcesses: 100, memoryBytes: 2 * 2 ** 30, cpus: 1.5 };
    const { check, limits } = await probeLimitsLine(PYTHON, asked);
    made.push(limits);
    assert.equal(check.ok, true, check.detail);
    assert.match(
      check.detail,
      new RegExp(
        `^each kernel: at most 100 processes and threads \\(cgroup v[12]\\), at most 2 GiB of memory \\(cgroup v[12]\\), at most 1.5 CPUs \\(cgroup v[12]\\), ${EACH}1 GiB each \\(tmpfs, half the memory limit, and counted in it\\)$`,
      ),
    );
    assert.equal(limits.cpus, 1.5);
    assert.ok(limits.cgroups.cpu, "the CPU group is reported (and was removed)");
    for (const dir of Object.values(limits.cgroups)) assert.equal(existsSync(dir), false, dir);
  });

  test("the default: the process limit, no memory or CPU limit (but --cpus would hold), open files, tmpfs", async () => {
    const asked = resolveLimits({}, {});
    const { check, limits } = await probeLimitsLine(PYTHON, asked);
    assert.equal(check.ok, true, check.detail);
    assert.match(
      check.detail,
      new RegExp(
        `^each kernel: at most 1,024 processes and threads \\(cgroup v[12]\\), no memory limit \\(--memory-limit SIZE or NBAGENT_MEMORY_LIMIT sets one\\), no CPU limit \\(--cpus N or NBAGENT_CPUS sets one, by cgroup v[12] here\\), ${EACH}${bytesIec(tmpfsBytes(0)).replace(".", "\\.")} each \\(tmpfs, an eighth of the RAM\\)$`,
      ),
    );
    // The CPU limit doctor only probed is not in its answer (nbagent doctor --json).
    assert.equal(limits.cpus, null);
    assert.equal(limits.cpusVia, null);
    assert.equal(limits.cgroups.cpu, undefined);
  });

  test("unprivileged: no CPU limit to be had, said plainly; asked for, a warning with the reason", async () => {
    const got = await new Promise<AppliedLimits>((resolve, reject) => {
      const child = spawn(
        PYTHON,
        [
          "-c",
          `${readFileSync(LIMITS_PY, "utf8")}\nimport json\nprint(json.dumps(apply_limits(json.loads(sys.argv[1]), "doctor-test")))`,
          JSON.stringify(initLimits({ maxProcesses: 0, cpus: 1 })),
        ],
        { cwd: "/", stdio: ["ignore", "pipe", "inherit"], ...(ROOT ? { uid: NOBODY, gid: NOBODY } : {}) },
      );
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      child.once("error", reject);
      child.once("close", () => resolve(JSON.parse(out) as AppliedLimits));
    });
    assert.equal(got.cpusVia, null);
    const unasked = limitsCheck({ maxProcesses: 0, memoryBytes: 0, cpus: 0 }, got);
    assert.equal(unasked.ok, true);
    assert.match(
      unasked.detail,
      /^each kernel: no process limit \(--max-processes off\), no memory limit \(.*\), no CPU limit \(--cpus is unavailable here: no writable cgroup cpu controller\), at most 4,096 open files per process \(rlimit\), /,
    );
    assert.doesNotMatch(unasked.detail, /RLIMIT_CPU/);
    const asked = limitsCheck({ maxProcesses: 0, memoryBytes: 0, cpus: 1 }, got);
    assert.equal(asked.ok, false);
    assert.match(
      asked.detail,
      /^not in force here: 1 CPU per kernel; no process limit .* — .*no CPU limit without a cpu cgroup \(RLIMIT_CPU counts total seconds, not a rate\)$/,
    );
    assert.match(asked.fix ?? "", /delegated cgroup v2 subtree/);
  });

  test("a limit not in force is a warning with the reason", () => {
    const check = limitsCheck(
      { maxProcesses: 1024, memoryBytes: 0, cpus: 0 },
      {
        maxProcesses: null,
        memoryBytes: null,
        cpus: null,
        openFiles: 4096,
        tmpfsBytes: 3 * 2 ** 30,
        via: "rlimit",
        processesVia: "rlimit",
        memoryVia: null,
        cpusVia: "cgroup-v2",
        cgroups: {},
        cgroup: null,
        reason: "RLIMIT_NPROC is set but not enforced for root (uid 0)",
      },
      false,
    );
    assert.equal(check.ok, false);
    assert.equal(
      check.detail,
      "not in force here: 1,024 processes per kernel; no memory limit (--memory-limit SIZE or NBAGENT_MEMORY_LIMIT sets one), no CPU limit (--cpus N or NBAGENT_CPUS sets one, by cgroup v2 here), at most 4,096 open files per process (rlimit), /dev/shm: 3 GiB (tmpfs, an eighth of the RAM), the sandbox's /tmp unsized (this bubblewrap has no --size) — RLIMIT_NPROC is set but not enforced for root (uid 0)",
    );
  });
});
