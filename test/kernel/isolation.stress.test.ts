// Kernel isolation (docs/isolation.md), with real hosts, kernels, namespaces and signals:
// - a kernel cannot read the host's secrets through /proc (every /proc/*/environ, its own, and
//   /proc/$JPY_PARENT_PID/environ), spawned or forked;
// - a child the kernel starts in its own session (setsid) dies with the kernel, on shutdown and when
//   the kernel is SIGKILLed;
// - the sandbox: writes outside cwd refused, inside fine, interrupts work, nothing is left after a
//   SIGKILLed host, and net-off cannot connect;
// - connection files live in the state directory (0700) and a dead host's are swept;
// - where the namespace is refused, the kernel says so (and why) instead of promising.
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { findBwrap } from "../../src/kernel/index.js";
import { newConnectionPath } from "../../src/kernel/local/connection-file.js";
import { isolationNote } from "../../src/tools/kernel-text.js";
import { cliEntry } from "../cli.js";
import { pidAlive, processesMentioning, waitUntil } from "./helpers.js";

const HOST = fileURLToPath(new URL("./fixtures/isolation-host.ts", import.meta.url));
const SECRET = `nbagent-secret-${randomBytes(12).toString("hex")}`;
const HAS_BWRAP = findBwrap(process.env) !== undefined;

/** Reads every /proc/<pid>/environ the kernel can, its own and its JPY_PARENT_PID's; prints a verdict. */
const SNOOP = `
import os
secret = os.environ.get("NBAGENT_PROBE_SECRET_NAME", "NBAGENT_TEST_API_KEY")
found, seen = [], []
paths = ["/proc/self/environ", "/proc/%s/environ" % os.environ.get("JPY_PARENT_PID", "0")]
paths += ["/proc/%s/environ" % p for p in os.listdir("/proc") if p.isdigit()]
for path in paths:
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    seen.append(path)
    if b"NBAGENT_TEST_API_KEY=" in data or ${JSON.stringify(SECRET)}.encode() in data:
        found.append(path)
print("read", len(seen), "found", found, "pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
`;

interface Host {
  proc: ChildProcessWithoutNullStreams;
  next(): Promise<Record<string, unknown>>;
  ask(req: Record<string, unknown>): Promise<Record<string, unknown>>;
}

function startHost(mode: string, extraEnv: Record<string, string> = {}, cwd?: string): Host {
  const proc = spawn(process.execPath, ["--import", "tsx", HOST, mode, ...(cwd ? [cwd] : [])], {
    env: { ...process.env, NBAGENT_TEST_API_KEY: SECRET, ...extraEnv },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr.on("data", (d) => {
    err += d;
  });
  const lines: Interface = createInterface({ input: proc.stdout });
  const queue: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  lines.on("line", (l) => {
    const w = waiters.shift();
    if (w) w(l);
    else queue.push(l);
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const q = queue.shift();
      if (q !== undefined) return resolve(JSON.parse(q));
      const onExit = (code: number | null) => reject(new Error(`host exited (${code}): ${err}`));
      proc.once("exit", onExit);
      waiters.push((l) => {
        proc.off("exit", onExit);
        resolve(JSON.parse(l));
      });
    });
  return {
    proc,
    next,
    ask: (req) => {
      proc.stdin.write(`${JSON.stringify(req)}\n`);
      return next();
    },
  };
}

async function endHost(host: Host): Promise<void> {
  host.proc.stdin.end();
  if (host.proc.exitCode === null) await new Promise((r) => host.proc.once("exit", r));
}

/** The kernel's host pid: `pid` itself when it is pid 2 of its namespace (under its init), else a descendant. */
function kernelProcess(pid: number): number {
  const ns = (p: number) => /NSpid:.*\t2\s*$/m.test(readFileSync(`/proc/${p}/status`, "utf8"));
  if (ns(pid)) return pid;
  let p = pid;
  for (let depth = 0; depth < 3; depth++) {
    const child = Number(readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(" ")[0]);
    if (!child) break;
    if (ns(child)) return child;
    p = child;
  }
  throw new Error(`no kernel (pid 2 of a namespace) below ${pid}`);
}

/** Starts `sleep` in a session of its own from the kernel; returns its host pid. */
async function setsidChild(host: Host): Promise<number> {
  const marker = `1000.${Date.now() % 100000}${Math.floor(Math.random() * 1000)}`;
  const r = await host.ask({
    run: `import subprocess\np = subprocess.Popen(["sleep", "${marker}"], start_new_session=True)\nprint(p.pid)`,
  });
  assert.equal(r.status, "ok", String(r.text));
  assert.ok(await waitUntil(() => processesMentioning(marker).length === 1, 10_000));
  return processesMentioning(marker)[0];
}

describe("kernel isolation", { concurrency: false }, () => {
  for (const mode of ["spawn", "fork"]) {
    test(`${mode}: the kernel finds no host secret in any /proc/*/environ and sees no host process`, async () => {
      const host = startHost(mode);
      try {
        const first = await host.next();
        if (mode === "fork") await host.next();
        assert.deepEqual(first.isolation, { pidNamespace: true, via: "unshare", confined: true });
        const r = await host.ask({ run: SNOOP });
        assert.equal(r.status, "ok", String(r.text));
        assert.match(String(r.text), /found \[\] pids \[1, 2\]\n/);
        assert.ok(!String(r.text).includes(SECRET));
      } finally {
        await endHost(host);
      }
    });

    for (const how of ["shutdown", "SIGKILL"] as const) {
      test(`${mode}: a setsid child dies with its kernel (${how})`, async () => {
        const host = startHost(mode);
        try {
          const started = await host.next();
          const last = mode === "fork" ? await host.next() : started;
          const kernel = kernelProcess(Number(last.pid));
          const child = await setsidChild(host);
          assert.ok(pidAlive(child));
          if (how === "shutdown") assert.deepEqual(await host.ask({ shutdown: true }), { done: true });
          else process.kill(kernel, "SIGKILL");
          assert.ok(
            await waitUntil(() => !pidAlive(child) && !pidAlive(kernel), 10_000),
            "child left behind",
          );
        } finally {
          await endHost(host);
        }
      });
    }
  }

  test("the CLI's kernel (host with the secret in its own environment) finds no secret, and no note is added", async () => {
    const state = mkdtempSync(join(tmpdir(), "nbagent-iso-state-"));
    const r = spawnSync(
      process.execPath,
      [...cliEntry(), "call", "python", JSON.stringify({ cells: [{ code: SNOOP }] })],
      { env: { ...process.env, NBAGENT_TEST_API_KEY: SECRET, NBAGENT_STATE_DIR: state }, encoding: "utf8" },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /found \[\] pids \[1, 2\]/);
    assert.ok(!r.stdout.includes(SECRET));
    assert.ok(!r.stdout.includes("can see the other processes"), r.stdout);
  });

  test("connection files live in the state directory (0700); a SIGKILLed host's are swept by the next", async () => {
    const state = mkdtempSync(join(tmpdir(), "nbagent-iso-state-"));
    const dir = join(state, "kernels");
    const host = startHost("spawn", { NBAGENT_STATE_DIR: state });
    await host.next();
    const mine = readdirSync(dir).filter((n) => n.startsWith(`kernel-${host.proc.pid}-`));
    assert.ok(
      mine.some((n) => n.endsWith(".json")),
      `in ${dir}: ${readdirSync(dir)}`,
    );
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, mine[0])).mode & 0o777, 0o600);
    host.proc.kill("SIGKILL");
    await new Promise((r) => host.proc.once("exit", r));
    assert.ok(existsSync(join(dir, mine[0])), "a SIGKILLed host cannot clean up");
    await newConnectionPath(dir); // what the next host does before its first kernel
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.startsWith(`kernel-${host.proc.pid}-`)),
      [],
    );
  });

  test("where the namespace is refused, the kernel reports why and the note says what it can see", {
    skip: !HAS_BWRAP && "needs bubblewrap to refuse namespaces",
  }, async () => {
    // A host inside bubblewrap as an unprivileged user with nested user namespaces disabled: no
    // unshare is possible, as on machines that forbid unprivileged user namespaces.
    const bwrap = findBwrap(process.env) as string;
    // The run's TMPDIR is root's (0700): nobody gets a directory of its own, removed afterwards.
    const shared = mkdtempSync("/tmp/nbagent-iso-nobody-");
    chmodSync(shared, 0o777);
    let r: ReturnType<typeof spawnSync>;
    try {
      r = spawnSync(
        "setpriv",
        [
          "--reuid=nobody",
          "--regid=nogroup",
          "--clear-groups",
          bwrap,
          "--unshare-user",
          "--disable-userns",
          "--die-with-parent",
          "--ro-bind",
          "/",
          "/",
          "--dev-bind",
          "/dev",
          "/dev",
          "--bind",
          "/proc",
          "/proc",
          "--bind",
          shared,
          shared,
          "--",
          process.execPath,
          "--import",
          "tsx",
          HOST,
          "spawn",
          shared,
        ],
        {
          env: { ...process.env, HOME: shared, TMPDIR: shared, NBAGENT_STATE_DIR: join(shared, "state") },
          input: "",
          encoding: "utf8",
        },
      );
    } finally {
      rmSync(shared, { recursive: true, force: true });
    }
    if (r.status !== 0 && process.getuid?.() !== 0) return; // cannot switch users here
    assert.equal(r.status, 0, String(r.stderr));
    const isolation = JSON.parse(String(r.stdout).split("\n")[0]).isolation;
    assert.equal(isolation.pidNamespace, false);
    assert.match(
      isolation.reason,
      /unshare\(CLONE_NEWPID\) was refused \(Operation not permitted\), also inside a user namespace/,
    );
    assert.equal(
      isolationNote(isolation),
      `Note: this kernel can see the other processes of this user, the host's included, and could read their environment (/proc/<pid>/environ) with its API keys and tokens (no PID namespace: ${isolation.reason}). Do not read other processes' /proc entries; \`nbagent doctor\` says how to isolate kernels on this machine.`,
    );
  });

  test("NBAGENT_PIDNS=0 turns the namespace off and says so", async () => {
    const host = startHost("spawn", { NBAGENT_PIDNS: "0" });
    try {
      const first = await host.next();
      assert.deepEqual(first.isolation, { pidNamespace: false, reason: "turned off (NBAGENT_PIDNS=0)" });
      assert.equal(isolationNote({ pidNamespace: true, via: "unshare" }), undefined);
    } finally {
      await endHost(host);
    }
  });
});

describe("the sandbox", { concurrency: false, skip: !HAS_BWRAP && "bubblewrap is not installed" }, () => {
  test("writes outside cwd/tmp are refused, inside cwd they work; interrupts work; no secret", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "nbagent-iso-cwd-"));
    const outside = mkdtempSync(join(process.cwd(), ".iso-outside-"));
    const host = startHost("sandbox", {}, cwd);
    try {
      const first = await host.next();
      const isolation = first.isolation as {
        pidNamespace: boolean;
        sandbox: { writable: string[]; network: boolean };
      };
      assert.equal(isolation.pidNamespace, true);
      assert.equal(isolation.sandbox.network, true);
      assert.ok(isolation.sandbox.writable.includes(cwd));
      const bad = await host.ask({ run: `open(${JSON.stringify(join(outside, "x"))}, "w").write("no")` });
      assert.equal(bad.status, "error");
      assert.equal(bad.error, "OSError");
      assert.ok(!existsSync(join(outside, "x")));
      const good = await host.ask({
        run: `open("here.txt", "w").write("yes")\nimport tempfile\nprint(open(tempfile.mkstemp()[1], "w").write("t"))`,
      });
      assert.equal(good.status, "ok", String(good.text));
      assert.equal(readFileSync(join(cwd, "here.txt"), "utf8"), "yes");
      const stopped = await host.ask({
        interrupt: "import time\nprint('started', flush=True)\ntime.sleep(300)",
      });
      assert.equal(stopped.error, "KeyboardInterrupt");
      const after = await host.ask({ run: "print(6 * 7)" });
      assert.equal(after.text, "42\n");
      const snoop = await host.ask({ run: SNOOP });
      assert.match(String(snoop.text), /found \[\] pids \[1, 2\]/);
    } finally {
      await endHost(host);
      spawnSync("rm", ["-rf", outside]);
    }
  });

  test("net-off: the kernel cannot connect to the host's loopback (it still runs code)", async () => {
    const server = createServer((s) => {
      s.on("error", () => {});
      s.end("hi");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const code = `import socket\ns = socket.socket()\ns.settimeout(5)\ntry:\n    s.connect(("127.0.0.1", ${port})); print("connected")\nexcept OSError as e:\n    print("refused", type(e).__name__)`;
    const hosts = [startHost("net-off"), startHost("sandbox")];
    try {
      const [off, on] = await Promise.all(hosts.map((h) => h.next()));
      assert.equal((off.isolation as { sandbox: { network: boolean } }).sandbox.network, false);
      assert.equal((on.isolation as { sandbox: { network: boolean } }).sandbox.network, true);
      assert.match(String((await hosts[0].ask({ run: code })).text), /^refused ConnectionRefusedError/);
      assert.equal((await hosts[1].ask({ run: code })).text, "connected\n");
    } finally {
      await Promise.all(hosts.map(endHost));
      server.close();
    }
  });

  test("a SIGKILLed host leaves no sandboxed kernel, bwrap or setsid child behind", async () => {
    const host = startHost("sandbox");
    const first = await host.next();
    const outer = Number(first.pid); // bwrap's
    const kernel = kernelProcess(outer);
    const child = await setsidChild(host);
    host.proc.kill("SIGKILL");
    assert.ok(
      await waitUntil(() => ![outer, kernel, child].some(pidAlive), 10_000),
      `left: ${[outer, kernel, child].filter(pidAlive)}`,
    );
  });

  test("nbagent run --sandbox: the notebook's cells cannot write outside its folder; the output is still written", () => {
    const dir = mkdtempSync(join(tmpdir(), "nbagent-run-sandbox-"));
    // Not under TMPDIR: inside the sandbox that is a private (writable) tmpfs.
    const outsideDir = mkdtempSync("/var/tmp/nbagent-outside-");
    const outside = join(outsideDir, "escaped");
    const cell = (source: string, id: string) => ({
      cell_type: "code",
      id,
      execution_count: null,
      metadata: {},
      outputs: [],
      source,
    });
    const nb = {
      cells: [
        cell("open('inside', 'w').write('ok')", "in"),
        cell(`open(${JSON.stringify(outside)}, 'w')`, "out"),
      ],
      metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
      nbformat: 4,
      nbformat_minor: 5,
    };
    writeFileSync(join(dir, "nb.ipynb"), JSON.stringify(nb));
    const r = spawnSync(
      process.execPath,
      [...cliEntry(), "run", "--sandbox", join(dir, "nb.ipynb"), "-o", join(dir, "out.ipynb")],
      { encoding: "utf8" },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /Read-only file system/);
    assert.equal(readFileSync(join(dir, "inside"), "utf8"), "ok");
    assert.equal(existsSync(outside), false);
    const out = JSON.parse(readFileSync(join(dir, "out.ipynb"), "utf8"));
    assert.equal(out.cells[1].outputs[0].ename, "OSError");
    rmSync(outsideDir, { recursive: true, force: true });
  });
});
