/**
 * `nbagent doctor`: which interpreter will run kernels, and whether what nbagent needs is importable,
 * with the exact command that fixes each missing piece; which isolation kernels get here
 * (docs/isolation.md), probed for real; and every kernelspec found, started for real (docs/kernels.md).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { candidateInterpreters, findInterpreter, probeInterpreter } from "../kernel/interpreter.js";
import { type AppliedLimits, probeLimits } from "../kernel/local/limits.js";
import { bwrapSizesTmpfs, probeIsolation } from "../kernel/local/sandbox.js";
import type { KernelIsolation, KernelLimits } from "../kernel/types.js";
import type { Settings } from "../runtime/settings.js";
import { bytesIec, plural } from "../sys/units.js";
import type { DoctorCheck } from "./doctor-check.js";
import { kernelChecks } from "./doctor-kernels.js";

export interface DoctorReport {
  ok: boolean;
  interpreter: { path: string; source: string; version: string } | null;
  checks: DoctorCheck[];
  /** What a kernel started now gets (null without an interpreter). */
  isolation: KernelIsolation | null;
  /** What a kernel started with --sandbox=net-off gets (null without an interpreter). */
  sandbox: KernelIsolation | null;
  /** The limits a kernel started now gets, and how (null without an interpreter). */
  limits: AppliedLimits | null;
}

const PY_MODULES: { module: string; debian: string; pip: string; required: boolean; why: string }[] = [
  {
    module: "ipykernel",
    debian: "python3-ipykernel",
    pip: "ipykernel",
    required: true,
    why: "runs the kernels",
  },
  {
    module: "nbformat",
    debian: "python3-nbformat",
    pip: "nbformat",
    required: true,
    why: "notebook validation",
  },
  {
    module: "jupyter_server",
    debian: "python3-jupyter-server",
    pip: "jupyter_server",
    required: false,
    why: "the shared gateway backend",
  },
];

function fixFor(pkg: { debian: string; pip: string }, python: string): string {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (isRoot && existsSync("/etc/debian_version") && python.startsWith("/usr/bin/")) {
    return `apt-get install -y ${pkg.debian}`;
  }
  return `${python} -m pip install ${pkg.pip}`;
}

export async function runDoctor(cwd: string, settings: Settings): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  const major = Number(process.versions.node.split(".")[0]);
  checks.push({
    name: "node",
    ok: major >= 20,
    detail: `Node ${process.versions.node}`,
    fix: major >= 20 ? undefined : "install Node.js 20 or newer",
    required: true,
  });
  try {
    createRequire(import.meta.url)("zeromq");
    checks.push({ name: "zeromq", ok: true, detail: "native ZeroMQ binding loads", required: true });
  } catch (err) {
    checks.push({
      name: "zeromq",
      ok: false,
      detail: `cannot load zeromq: ${(err as Error).message.split("\n")[0]}`,
      fix: "npm ci (the zeromq package ships prebuilt binaries for Linux x64)",
      required: true,
    });
  }

  let interpreter: DoctorReport["interpreter"] = null;
  let isolation: KernelIsolation | null = null;
  let sandbox: KernelIsolation | null = null;
  let limits: AppliedLimits | null = null;
  try {
    const choice = await findInterpreter({
      cwd,
      fresh: true,
      env: settings.env,
      cacheDir: settings.stateRoot,
    });
    interpreter = { path: choice.path, source: choice.source, version: choice.version };
    checks.push({
      name: "python",
      ok: true,
      detail: `${choice.path} (Python ${choice.version}, chosen by ${choice.source})`,
      required: true,
    });
    const probe = await probeInterpreter(
      choice.path,
      PY_MODULES.map((m) => m.module),
    );
    for (const m of PY_MODULES) {
      const ok = probe?.modules[m.module] === true;
      checks.push({
        name: m.module,
        ok,
        detail: ok ? `importable (${m.why})` : `not importable (${m.why})`,
        fix: ok ? undefined : fixFor(m, choice.path),
        required: m.required,
      });
    }
    [isolation, sandbox] = await Promise.all([
      probeIsolation(choice.path),
      settings.bwrap
        ? probeIsolation(choice.path, { writable: [], network: false }, settings.bwrap)
        : Promise.resolve(null),
    ]);
    checks.push(...isolationChecks(isolation, sandbox, settings.bwrap));
    const line = await probeLimitsLine(
      choice.path,
      settings.limits,
      !settings.bwrap || bwrapSizesTmpfs(settings.bwrap),
    );
    limits = line.limits;
    checks.push(line.check);
    checks.push(...(await kernelChecks(choice.path, settings)));
  } catch (err) {
    const tried = candidateInterpreters({ cwd, env: settings.env }).map((c) => c.path);
    checks.push({
      name: "python",
      ok: false,
      detail: (err as Error).message,
      fix:
        tried.length === 0
          ? "install Python 3 (apt-get install -y python3) or set NBAGENT_PYTHON"
          : "bash scripts/setup.sh (installs the Debian packages as root, or makes ./.venv with pip otherwise)",
      required: true,
    });
  }
  return { ok: checks.every((c) => c.ok || !c.required), interpreter, checks, isolation, sandbox, limits };
}

const MECHANISM = { "cgroup-v2": "cgroup v2", "cgroup-v1": "cgroup v1", rlimit: "rlimit" } as const;

/**
 * The limits line (docs/isolation.md, "Limits"): what each kernel gets here and through what —
 * processes, memory, CPUs, open files, the size of its tmpfs mounts; a warning when a limit asked for
 * is not in force. `got` is the probe's answer for `asked`, with a CPU limit probed even when none
 * was asked (doctor asks for 1), to say whether --cpus would hold here. `sandboxTmp`: whether the
 * sandbox's $TMPDIR is sized too (a bubblewrap with --size). Not required.
 */
export function limitsCheck(
  asked: Required<KernelLimits>,
  got: AppliedLimits,
  sandboxTmp = true,
): DoctorCheck {
  const parts: string[] = [];
  const missing: string[] = [];
  // The CPU limit was only probed when none was asked: its reason is no warning then.
  const reason = !asked.cpus && got.cpusReason ? dropReason(got.reason, got.cpusReason) : got.reason;
  if (!asked.maxProcesses) parts.push("no process limit (--max-processes off)");
  else if (got.maxProcesses && got.processesVia)
    parts.push(
      `at most ${plural(got.maxProcesses, "process", "processes")} and threads (${MECHANISM[got.processesVia]})`,
    );
  else missing.push(`${plural(asked.maxProcesses, "process", "processes")}`);
  if (!asked.memoryBytes)
    parts.push("no memory limit (--memory-limit SIZE or NBAGENT_MEMORY_LIMIT sets one)");
  else if (got.memoryBytes && got.memoryVia)
    parts.push(
      `at most ${bytesIec(got.memoryBytes)} of memory (${MECHANISM[got.memoryVia]}${got.memoryVia === "rlimit" ? ", per process" : ""})`,
    );
  else missing.push(bytesIec(asked.memoryBytes));
  if (!asked.cpus) {
    parts.push(
      got.cpusVia
        ? `no CPU limit (--cpus N or NBAGENT_CPUS sets one, by ${MECHANISM[got.cpusVia]} here)`
        : "no CPU limit (--cpus is unavailable here: no writable cgroup cpu controller)",
    );
  } else if (got.cpus && got.cpusVia) parts.push(`at most ${cpusText(got.cpus)} (${MECHANISM[got.cpusVia]})`);
  else missing.push(cpusText(asked.cpus));
  if (got.openFiles) parts.push(`at most ${plural(got.openFiles, "open file")} per process (rlimit)`);
  if (got.tmpfsBytes) {
    const where = sandboxTmp ? "/dev/shm and the sandbox's /tmp" : "/dev/shm";
    const how = asked.memoryBytes
      ? got.memoryVia && got.memoryVia !== "rlimit"
        ? "half the memory limit, and counted in it"
        : "half the memory limit, not counted in it (no memory cgroup)"
      : "an eighth of the RAM";
    parts.push(`${where}: ${bytesIec(got.tmpfsBytes)}${sandboxTmp ? " each" : ""} (tmpfs, ${how})`);
    if (!sandboxTmp) parts.push("the sandbox's /tmp unsized (this bubblewrap has no --size)");
  }
  const why = reason ? ` — ${reason}` : "";
  if (missing.length)
    return {
      name: "limits",
      ok: false,
      detail: `not in force here: ${missing.join(" and ")} per kernel${parts.length ? `; ${parts.join(", ")}` : ""}${why}`,
      fix: "run nbagent as root (cgroups), or give this user a delegated cgroup v2 subtree (systemd: Delegate=yes)",
      required: false,
    };
  return { name: "limits", ok: true, detail: `each kernel: ${parts.join(", ")}${why}`, required: false };
}

/**
 * The limits line for `asked`, probed for real (probeLimits), and what a kernel gets. A CPU limit is
 * probed even when none was asked, so that the line says whether --cpus would hold here; the answer
 * then leaves it out.
 */
export async function probeLimitsLine(
  python: string,
  asked: Required<KernelLimits>,
  sandboxTmp = true,
): Promise<{ check: DoctorCheck; limits: AppliedLimits }> {
  const got = await probeLimits(python, { ...asked, cpus: asked.cpus || 1 });
  return {
    check: limitsCheck(asked, got, sandboxTmp),
    limits: asked.cpus ? got : withoutProbedCpus(got),
  };
}

/** The probe's answer without the CPU limit doctor asked for only to see whether it would hold. */
function withoutProbedCpus(got: AppliedLimits): AppliedLimits {
  const { cpu: _, ...cgroups } = got.cgroups;
  const reason = got.cpusReason ? dropReason(got.reason, got.cpusReason) : got.reason;
  const vias = new Set([got.processesVia, got.memoryVia].filter((v) => v !== null));
  return {
    ...got,
    cpus: null,
    cpusVia: null,
    cgroups,
    cgroup: Object.values(cgroups).sort()[0] ?? null,
    via: vias.size === 1 ? [...vias][0] : vias.size ? "mixed" : "none",
    reason,
    cpusReason: undefined,
  };
}

/** `reason` ("a; b; c") without the part `part`; undefined when nothing is left. */
function dropReason(reason: string | undefined, part: string): string | undefined {
  const rest = (reason ?? "")
    .replace(part, "")
    .replace(/^(; )+|(; )+$/g, "")
    .replace(/(; ){2,}/g, "; ");
  return rest || undefined;
}

function cpusText(cpus: number): string {
  return `${Number(cpus.toFixed(2))} ${cpus === 1 ? "CPU" : "CPUs"}`;
}

/** The two isolation lines: the default PID namespace, and the opt-in sandbox. Neither is required. */
export function isolationChecks(
  isolation: KernelIsolation,
  sandbox: KernelIsolation | null,
  bwrap: string | undefined,
): DoctorCheck[] {
  const pid: DoctorCheck = isolation.pidNamespace
    ? {
        name: "isolation",
        ok: true,
        detail: `kernels run in a PID namespace of their own (via ${isolation.via}): no other process, the host's included, is visible to them, and what they start ends with them`,
        required: false,
      }
    : {
        name: "isolation",
        ok: false,
        detail: `none: kernels can see every process of this user, the host included, and read its environment (/proc/<pid>/environ) — ${isolation.reason ?? "reason unknown"}`,
        fix: "allow user namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0), or run on Linux",
        required: false,
      };
  let box: DoctorCheck;
  if (!sandbox) {
    box = {
      name: "sandbox",
      ok: false,
      detail: "--sandbox is unavailable: bubblewrap (bwrap) is not installed",
      fix: "apt-get install -y bubblewrap (as root; or your distribution's bubblewrap package)",
      required: false,
    };
  } else if (sandbox.reason && !sandbox.pidNamespace && /sandbox/.test(sandbox.reason)) {
    box = {
      name: "sandbox",
      ok: false,
      detail: `--sandbox is unavailable: ${sandbox.reason}`,
      required: false,
    };
  } else {
    box = {
      name: "sandbox",
      ok: true,
      detail: `--sandbox available (bubblewrap at ${bwrap}): read-only filesystem except the working directory, a private temp dir and the artifacts; --sandbox=net-off also cuts the network${sandbox.pidNamespace ? "" : ` (but no PID namespace inside: ${sandbox.reason})`}`,
      required: false,
    };
  }
  return [pid, box];
}

export function formatDoctor(report: DoctorReport): string {
  const lines = report.checks.map((c) => {
    const mark = c.ok ? "ok  " : c.required ? "FAIL" : "warn";
    const fix = c.fix ? `\n       fix: ${c.fix}` : "";
    return `${mark} ${c.name}: ${c.detail}${fix}`;
  });
  lines.push(report.ok ? "nbagent is ready." : "nbagent is not ready: apply the fixes above.");
  return lines.join("\n");
}
