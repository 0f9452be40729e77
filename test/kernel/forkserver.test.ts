// The pre-warmed fork server: kernels after the first are forked from it, each still a real,
// separate ipykernel process (own pid, process group, cwd, environment and state); interrupts, crash
// detection, shutdown and orphan handling behave as for normally launched kernels.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type ConnectedKernel, createLocalBackend, resolveKernelSpec } from "../../src/kernel/index.js";
import { forkPlan, startupSignature } from "../../src/kernel/local/forkserver.js";
import { ForkedKernelProcess } from "../../src/kernel/local/forkserver-kernel.js";
import { LocalKernelProcess } from "../../src/kernel/local/launcher.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";
import { childrenOf, exitMidExecution, groupMembers, pidAlive, waitUntil } from "./helpers.js";

const HOST = fileURLToPath(new URL("./fixtures/forkserver-host.ts", import.meta.url));
const backend = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: true });
after(() => backend.dispose());

function ppidOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

/**
 * Who started a kernel: the nearest of its ancestors that is this test process or one of `servers`
 * (in a PID namespace, docs/isolation.md, the kernel is below its init, and below a relay too when
 * spawned or unprivileged).
 */
function starterOf(pid: number, servers: number[] = backend.forkServerPids()): number | undefined {
  let p = pid;
  for (let depth = 0; depth < 5 && p > 1; depth++) {
    p = ppidOf(p);
    if (p === process.pid || servers.includes(p)) return p;
  }
  return undefined;
}

function hostEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

function launchedOf(kernel: ConnectedKernel): unknown {
  return (kernel as unknown as { launched: unknown }).launched;
}

function assertForked(kernel: ConnectedKernel): void {
  const servers = backend.forkServerPids();
  const starter = kernel.pid && starterOf(kernel.pid, servers);
  assert.ok(starter && servers.includes(starter), `kernel ${kernel.pid} not forked`);
  assert.ok(launchedOf(kernel) instanceof ForkedKernelProcess);
}

async function timedStart(options: Parameters<typeof backend.startKernel>[0]) {
  const t = performance.now();
  const kernel = await backend.startKernel(options);
  return { kernel, ms: performance.now() - t };
}

// The sequential suite and the independent tests below run side by side (the file stays quick).
describe("fork server", { concurrency: true }, () => {
  describe("kernels forked from the pre-warmed server", { concurrency: 1 }, () => {
    let first: ConnectedKernel;
    const forked: ConnectedKernel[] = [];

    test("two kernels the normal way (the second warms the server), then 3 forked: independent, own cwd/env/group", async () => {
      const dirs = await Promise.all([0, 1, 2, 3].map(() => mkdtemp(join(tmpdir(), "nbagent-fork-"))));
      const started = await timedStart({ cwd: dirs[0] });
      first = started.kernel;
      assert.equal(starterOf(first.pid!), process.pid, "the first kernel is spawned by the host");
      assert.ok(first.startAttempts >= 1);
      assert.deepEqual(backend.forkServerPids(), [], "one kernel never starts a server");
      // The server warms up with the second kernel's environment; forked kernels must not inherit it.
      const second = await backend.startKernel({ env: hostEnv({ WARM_ONLY_SECRET: "hunter2" }) });
      assert.equal(backend.forkServerPids().length, 1, "the second kernel starts the server");
      // It goes the normal way while the server warms up. Only a retried launch (a port lost to a
      // race on a loaded machine) may find the server ready, and then it is forked.
      if (second.startAttempts === 1)
        assert.equal(starterOf(second.pid!), process.pid, "the second kernel is spawned by the host");
      else assertForked(second);
      await second.shutdown();
      const times: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const { kernel, ms } = await timedStart({ cwd: dirs[i], env: hostEnv({ GIVEN: `k${i}` }) });
        forked.push(kernel);
        times.push(ms);
      }
      console.log(
        `start times: first (normal, no server) ${started.ms.toFixed(0)} ms, forked ${times.map((t) => t.toFixed(0)).join(", ")} ms`,
      );
      const pids = new Set([first.pid, ...forked.map((k) => k.pid)]);
      assert.equal(pids.size, 4, "distinct pids");
      for (const [i, kernel] of forked.entries()) {
        assertForked(kernel);
        await kernel.execute(`x = ${i + 1}`);
        const r = await kernel.execute(
          [
            "import os, subprocess, sys",
            "print(os.getpid(), os.getpgrp(), os.getsid(0))",
            "print(os.getcwd())",
            "print(os.environ.get('GIVEN'), 'WARM_ONLY_SECRET' in os.environ)",
            "print(subprocess.run(['env'], capture_output=True, text=True).stdout.count('WARM_ONLY_SECRET'))",
            "print(sys.argv[0].endswith('ipykernel_launcher.py'), sys.argv[1] == '-f')",
          ].join("\n"),
        );
        // In its PID namespace (docs/isolation.md) the kernel is pid 2, below its init, and leads its
        // group and session.
        const pid = kernel.isolation?.pidNamespace ? 2 : kernel.pid;
        assert.equal(
          r.text,
          `${pid} ${pid} ${pid}\n${dirs[i + 1]}\nk${i + 1} False\n0\nTrue True\n`,
          `kernel ${i + 1}`,
        );
        assert.deepEqual(groupMembers(kernel.pid!), [kernel.pid], "alone in its process group");
      }
      for (const [i, kernel] of forked.entries()) {
        assert.equal((await kernel.execute("x")).displays[0]?.text, String(i + 1), "state is per kernel");
      }
      // Forking is checked by parentage (assertForked); how much faster it is is the bench's to say —
      // a timing bound here failed the whole group on a loaded machine.
    });

    test("interrupt of time.sleep(100) in a forked kernel returns within 2 s and keeps state", async () => {
      const kernel = forked[0];
      const controller = new AbortController();
      const result = await kernel.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(100)", {
        signal: controller.signal,
        onChunk: () => controller.abort(),
      });
      assert.equal(result.cancelled, true);
      assert.equal(result.kernelRestarted, false);
      assert.equal(result.error?.name, "KeyboardInterrupt");
      assert.equal((await kernel.execute("x")).displays[0]?.text, "1");
    });

    test("os._exit(1) in a forked kernel is detected within 5 s; restart forks again", async () => {
      const kernel = forked[1];
      const before = kernel.pid!;
      const r = await exitMidExecution(kernel);
      assert.match(JSON.stringify(r.notices), /kernel process ended: exit code 1/);
      assert.ok(await waitUntil(() => !pidAlive(before), 2000), "the old process is gone");
      await kernel.restart();
      assertForked(kernel);
      assert.notEqual(kernel.pid, before);
      assert.equal((await kernel.execute("1 + 1")).displays[0]?.text, "2");
    });

    test("matplotlib inline and pandas work in a forked kernel", async () => {
      const kernel = forked[2];
      const plot = await kernel.execute(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()",
      );
      assert.equal(plot.status, "ok", plot.text);
      assert.ok(
        plot.displays.some((d) => typeof d.data["image/png"] === "string"),
        "a PNG display",
      );
      const frame = await kernel.execute("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})");
      assert.equal(frame.status, "ok", frame.text);
      assert.match(String(frame.displays[0]?.data["text/html"]), /<table/);
    });

    test("shutdown leaves no process and removes the connection file and log", async () => {
      const kernel = forked[2];
      const launched = launchedOf(kernel) as ForkedKernelProcess;
      assert.ok(existsSync(launched.connectionFile));
      const pid = kernel.pid!;
      await kernel.shutdown();
      assert.ok(await waitUntil(() => !pidAlive(pid) && groupMembers(pid).length === 0, 5000));
      assert.equal(existsSync(launched.connectionFile), false);
      assert.equal(existsSync(launched.logFile), false);
    });

    test("the fork server SIGKILLed: its kernels and their subprocesses die, the host notices", async () => {
      const kernel = forked[0];
      await kernel.execute("import subprocess\np = subprocess.Popen(['sleep', '300'])");
      // The host's pid for it (inside, pids are the kernel's namespace's).
      const child = childrenOf(kernel.pid!)[0];
      const [server] = backend.forkServerPids();
      assert.ok(pidAlive(child) && server);
      process.kill(server, "SIGKILL");
      const gone = await waitUntil(
        () => !pidAlive(kernel.pid!) && !pidAlive(child) && !kernel.isAlive(),
        5000,
      );
      assert.ok(gone, `left: kernel ${pidAlive(kernel.pid!)}, child ${pidAlive(child)}`);
      assert.match(kernel.deathReason(), /fork server exited/);
      // The next start still works (the normal way, while a new server warms up).
      const next = await backend.startKernel({});
      assert.equal((await next.execute("2 * 21")).displays[0]?.text, "42");
      await next.shutdown();
    });
  });

  for (const how of ["SIGKILL", "process.exit()"] as const) {
    test(`a host ended by ${how} leaves no kernel, subprocess or fork server behind`, async () => {
      const args = how === "SIGKILL" ? [] : ["exit"];
      const host = spawn(process.execPath, ["--import", "tsx", HOST, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      host.stderr.on("data", (d) => {
        err += d;
      });
      const pids = await new Promise<{ server: number; kernels: number[]; child: number }>(
        (resolve, reject) => {
          host.stdout.on("data", (d) => {
            out += d;
            if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
          });
          host.once("close", (code) => reject(new Error(`host exited (${code}) before reporting: ${err}`)));
        },
      );
      assert.equal(pids.kernels.length, 2);
      assert.ok(pids.server > 0, "a fork server was running");
      const all = [pids.server, ...pids.kernels, pids.child];
      if (how === "SIGKILL") {
        assert.equal(starterOf(pids.kernels[1], [pids.server]), pids.server, "the second kernel was forked");
        host.kill("SIGKILL");
      }
      const gone = await waitUntil(
        () => all.every((p) => !pidAlive(p)) && pids.kernels.every((k) => groupMembers(k).length === 0),
        5000,
      );
      assert.ok(gone, `left behind: ${all.filter(pidAlive)}`);
    });
  }

  /** Launcher lines that fail the first launch as a lost port race does (FAKE_DIR keeps a marker). */
  const FAIL_ONCE = [
    "marker = os.path.join(os.environ['FAKE_DIR'], 'tried')",
    "if not os.path.exists(marker):",
    "    open(marker, 'w').close()",
    "    sys.stderr.write('zmq.error.ZMQError: Address already in use (addr=tcp://127.0.0.1:1)\\n')",
    "    sys.exit(1)",
  ];

  /**
   * A backend whose kernels run an ipykernel_launcher shadowed on PYTHONPATH: `first` runs, then the
   * real one. Its fork server is warmed first unless `prewarm` is false.
   */
  async function withShadowedLauncher(
    first: string[],
    body: (
      shadowed: ReturnType<typeof createLocalBackend>,
      env: Record<string, string>,
      dir: string,
    ) => Promise<void>,
    prewarm = true,
  ): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), "nbagent-fork-shadow-"));
    await writeFile(
      join(dir, "ipykernel_launcher.py"),
      [
        "import os, sys, runpy",
        ...first,
        "sys.path = [p for p in sys.path if p != os.environ['FAKE_DIR']]",
        "sys.modules.pop('ipykernel_launcher', None)",
        "runpy.run_module('ipykernel_launcher', run_name='__main__')",
      ].join("\n"),
    );
    const shadowed = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: true });
    try {
      const env = hostEnv({ PYTHONPATH: dir, FAKE_DIR: dir });
      if (prewarm) await shadowed.prewarm({ env });
      await body(shadowed, env, dir);
    } finally {
      await shadowed.dispose();
    }
  }

  test("forked kernels shut down end by themselves, their atexit handlers run and open files flushed", async () => {
    // A forked kernel ends without the interpreter's teardown (docs/reliability.md): what a notebook
    // expects at exit must still happen — atexit handlers (its own, IPython's) and buffered writes —
    // and the kernel must end on its own (exit code 0), not be killed after the shutdown grace: the
    // quick exit once raced ipykernel's control thread (a third of shutdowns hung): eight kernels.
    const own = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: true });
    try {
      await own.prewarm({});
      for (let i = 0; i < 8; i++) {
        const dir = await mkdtemp(join(tmpdir(), "nbagent-fork-exit-"));
        const kernel = await own.startKernel({ cwd: dir });
        const servers = own.forkServerPids();
        assert.ok(servers.includes(starterOf(kernel.pid!, servers) ?? 0), "forked");
        const r = await kernel.execute(
          [
            "import atexit, pathlib",
            "atexit.register(lambda: pathlib.Path('atexit.txt').write_text('handler ran'))",
            "text = open('text.txt', 'w')",
            "text.write('buffered text')",
            "raw = open('raw.bin', 'wb')",
            "raw.write(b'buffered bytes')",
            "print('registered', pathlib.Path('text.txt').stat().st_size, pathlib.Path('raw.bin').stat().st_size)",
          ].join("\n"),
        );
        assert.equal(r.text, "registered 0 0\n", "the writes are still in their buffers");
        const launched = launchedOf(kernel) as ForkedKernelProcess;
        await kernel.shutdown();
        assert.equal(await launched.exited, "exit code 0", `kernel ${i} ended by itself`);
        assert.equal(readFileSync(join(dir, "atexit.txt"), "utf8"), "handler ran");
        assert.equal(readFileSync(join(dir, "text.txt"), "utf8"), "buffered text");
        assert.equal(readFileSync(join(dir, "raw.bin"), "utf8"), "buffered bytes");
      }
    } finally {
      await own.dispose();
    }
  });

  test("a kernel started directly ends the same way: atexit handlers, open files flushed, no teardown", async () => {
    // The direct launcher (src/kernel/local/watchdog.ts) ends ipykernel_launcher with endkernel.py's
    // end_kernel, as forked kernels end: what Python promises at exit happens, and the
    // interpreter's teardown (it calls __del__ of objects still alive) does not.
    const own = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: false });
    try {
      for (let i = 0; i < 3; i++) {
        const dir = await mkdtemp(join(tmpdir(), "nbagent-direct-exit-"));
        const kernel = await own.startKernel({ cwd: dir });
        assert.ok(launchedOf(kernel) instanceof LocalKernelProcess, "started directly");
        const r = await kernel.execute(
          [
            "import atexit, pathlib, threading, time",
            "atexit.register(lambda: pathlib.Path('atexit.txt').write_text('handler ran'))",
            "text = open('text.txt', 'w')",
            "text.write('buffered text')",
            "raw = open('raw.bin', 'wb')",
            "raw.write(b'buffered bytes')",
            // Kept where IPython's exit handler (which clears the user's namespace) does not reach:
            // only the interpreter's teardown would call its __del__.
            "import os, sys",
            "class Mark:",
            "    def __del__(self, _open=os.open, _write=os.write, _close=os.close, _flags=os.O_WRONLY | os.O_CREAT, _path=os.path.abspath('teardown.txt')):",
            "        fd = _open(_path, _flags, 0o600); _write(fd, b'teardown ran'); _close(fd)",
            "sys.nbagent_test_mark = Mark()",
            "late = threading.Thread(target=lambda: (time.sleep(0.3), pathlib.Path('thread.txt').write_text('joined')))",
            "late.start()",
            "print('registered', pathlib.Path('text.txt').stat().st_size, pathlib.Path('raw.bin').stat().st_size)",
          ].join("\n"),
        );
        assert.equal(r.text, "registered 0 0\n", "the writes are still in their buffers");
        const launched = launchedOf(kernel) as LocalKernelProcess;
        await kernel.shutdown();
        assert.equal(await launched.exited, "exit code 0", `kernel ${i} ended by itself`);
        assert.equal(readFileSync(join(dir, "atexit.txt"), "utf8"), "handler ran");
        assert.equal(readFileSync(join(dir, "text.txt"), "utf8"), "buffered text");
        assert.equal(readFileSync(join(dir, "raw.bin"), "utf8"), "buffered bytes");
        assert.equal(
          readFileSync(join(dir, "thread.txt"), "utf8"),
          "joined",
          "a non-daemon thread is joined",
        );
        assert.equal(existsSync(join(dir, "teardown.txt")), false, "no interpreter teardown");
      }
    } finally {
      await own.dispose();
    }
  });

  test("forked and direct kernels start ipykernel without debugpy; a cell can still import it", async () => {
    // docs/reliability.md, "A kernel's start": ipykernel's debugger support is left out (~0.16 s of a
    // start), not debugpy itself.
    const probe = [
      "import sys, importlib.util, ipykernel.debugger as d",
      "print('debugger', d._is_debugpy_available, 'debugpy loaded', 'debugpy' in sys.modules)",
      "try:",
      "    import debugpy",
      "    print('cell import ok')",
      "except ImportError:",
      "    print('cell import ok' if importlib.util.find_spec('debugpy') is None else 'cell import refused')",
    ].join("\n");
    for (const forkServer of [true, false]) {
      const own = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer });
      try {
        if (forkServer) await own.prewarm({});
        const kernel = await own.startKernel({});
        assert.ok(
          launchedOf(kernel) instanceof (forkServer ? ForkedKernelProcess : LocalKernelProcess),
          forkServer ? "forked" : "started directly",
        );
        const r = await kernel.execute(probe);
        assert.equal(
          r.text,
          "debugger False debugpy loaded False\ncell import ok\n",
          `forkServer ${forkServer}`,
        );
      } finally {
        await own.dispose();
      }
    }
  });

  test("a forked kernel runs the launcher module as `python -m` would (one shadowed on PYTHONPATH too)", async () => {
    // (each test has its own FAKE_DIR)
    const mark = "open(os.path.join(os.environ['FAKE_DIR'], 'ran'), 'w').close()";
    await withShadowedLauncher([mark], async (shadowed, env, dir) => {
      const kernel = await shadowed.startKernel({ env });
      assert.ok(
        shadowed.forkServerPids().includes(starterOf(kernel.pid!, shadowed.forkServerPids()) ?? 0),
        "forked",
      );
      assert.ok(existsSync(join(dir, "ran")), "the shadowing launcher ran in the kernel");
      assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
    });
  });

  test("a forked kernel that loses a port race (Address already in use) is forked again", async () => {
    // Its output lives in a log file that cleanup removes: the retry decision must read it first.
    await withShadowedLauncher(FAIL_ONCE, async (shadowed, env, dir) => {
      const kernel = await shadowed.startKernel({ env });
      assert.ok(existsSync(join(dir, "tried")), "the first attempt failed");
      assert.equal(kernel.startAttempts, 2);
      assert.ok(
        shadowed.forkServerPids().includes(starterOf(kernel.pid!, shadowed.forkServerPids()) ?? 0),
        "the retry was forked",
      );
      assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
    });
  });

  test("a retried launch is the same kernel: the first kernel's retry warms no server", async () => {
    await withShadowedLauncher(
      FAIL_ONCE,
      async (fresh, env, dir) => {
        const kernel = await fresh.startKernel({ env });
        assert.ok(existsSync(join(dir, "tried")), "the first attempt failed");
        assert.equal(kernel.startAttempts, 2);
        assert.deepEqual(fresh.forkServerPids(), [], "one kernel, retried, starts no server");
        assert.equal((await kernel.execute("6 * 7")).displays[0]?.text, "42");
      },
      false,
    );
  });

  test("a fork server that cannot start: every kernel still starts the normal way", async () => {
    // A sitecustomize (found through PYTHONPATH) that kills only the fork server at its startup.
    const dir = await mkdtemp(join(tmpdir(), "nbagent-fork-broken-"));
    await mkdir(join(dir, "site"));
    await writeFile(
      join(dir, "site", "sitecustomize.py"),
      "import os, sys\nif sys.argv and sys.argv[0].endswith('forkserver.py'):\n    os._exit(3)\n",
    );
    const broken = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: true });
    try {
      const env = hostEnv({ PYTHONPATH: join(dir, "site") });
      for (let i = 0; i < 3; i++) {
        const kernel = await broken.startKernel({ env });
        assert.equal(
          starterOf(kernel.pid!, broken.forkServerPids()),
          process.pid,
          `kernel ${i} launched by the host`,
        );
        assert.equal((await kernel.execute("1 + 2")).displays[0]?.text, "3");
        await kernel.shutdown();
      }
    } finally {
      await broken.dispose();
    }
  });

  test("only `<python> -m ipykernel_launcher|ipykernel` specs of the server's interpreter are forked", async () => {
    const spec = await resolveKernelSpec("python3");
    assert.deepEqual(forkPlan(spec), { module: "ipykernel_launcher", args: ["-f", "{connection_file}"] });
    const withArgv = (argv: string[]) => forkPlan({ ...spec, argv });
    assert.ok(withArgv([spec.python, "-m", "ipykernel", "-f", "{connection_file}", "--debug"]));
    assert.equal(
      withArgv(["/other/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]),
      undefined,
    );
    assert.equal(withArgv([spec.python, "-m", "other_kernel", "-f", "{connection_file}"]), undefined);
    assert.equal(withArgv([spec.python, "/path/kernel.py", "-f", "{connection_file}"]), undefined);
    assert.equal(withArgv(["/usr/bin/R", "--slave", "-e", "IRkernel::main()"]), undefined);
    // Variables read at interpreter start-up or import key the server; others do not.
    assert.notEqual(startupSignature({ PYTHONPATH: "/a" }), startupSignature({ PYTHONPATH: "/b" }));
    assert.equal(startupSignature({ GIVEN: "1", PATH: "/a" }), startupSignature({ GIVEN: "2", PATH: "/b" }));
  });
});
