/**
 * Issue 17, "kernels that untrusted code cannot escape" (docs/isolation.md): each attack below runs
 * as kernel code through the real python tool of the built CLI, in a host that runs as root and as
 * nobody (harness.ts), and must FAIL. The test names say which promise each attacks.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, test } from "node:test";
import { startJupyterServer } from "../gateway/helpers.js";
import { httpClient, textOf } from "../mcp/helpers.js";
import {
  assertBlocked,
  assertInterruptWorks,
  assertNoSecret,
  asWho,
  command,
  MCP_SECRET,
  nbagent,
  newPlace,
  own,
  PRINCIPALS,
  runSnippet,
  SANDBOXES,
  SECRET,
  setUp,
  withHost,
} from "./harness.js";
import {
  gatewayToken,
  hijackKernels,
  plantArtifactLinks,
  probeNames,
  systemProbe,
  umountThenEnviron,
} from "./snippets.js";

setUp();

for (const who of PRINCIPALS) {
  describe(`attacks ${asWho(who)}`, { concurrency: false }, () => {
    test("1. /proc stays the kernel's: umount2('/proc') fails and no host secret is readable in any /proc entry", async () => {
      const r = await runSnippet(who, umountThenEnviron([SECRET, MCP_SECRET]));
      assertNoSecret(r.text);
      assertBlocked(r.text, ["umount-proc", "proc-secret"]);
    });

    test("2. other kernels are out of reach: session B cannot list or drive session A's kernel (one host)", async () => {
      const place = newPlace(who);
      const value = `victim-${randomBytes(8).toString("hex")}`;
      await withHost(place, [], {}, async (host) => {
        const a = await host.python(`victim = ${JSON.stringify(value)}\nprint("set")`, { session: "A" });
        assert.match(a.text, /^set$/m, a.text);
        const b = await host.python(hijackKernels(place.state, "victim"), { session: "B" });
        assert.ok(!b.text.includes(value), `session B read session A's variable:\n${b.text}`);
        assertBlocked(b.text, ["kernels-dir", "hijack"]);
        // A is untouched and still answers.
        const again = await host.python("print(victim)", { session: "A" });
        assert.match(again.text, new RegExp(`^${value}$`, "m"));
      });
    });

    test("2. other kernels are out of reach: a second host's kernel cannot drive the first host's (same state dir)", async () => {
      const place = newPlace(who);
      const value = `victim-${randomBytes(8).toString("hex")}`;
      await withHost(place, [], {}, async (first) => {
        const a = await first.python(`victim = ${JSON.stringify(value)}\nprint("set")`);
        assert.match(a.text, /^set$/m, a.text);
        const b = await withHost(place, [], {}, (second) =>
          second.python(hijackKernels(place.state, "victim")),
        );
        assert.ok(!b.text.includes(value), `the second host's kernel read the first's variable:\n${b.text}`);
        assertBlocked(b.text, ["kernels-dir", "hijack"]);
      });
    });

    test("2. MCP over HTTP: client B's kernel cannot reach client A's kernel, its variables or the server's token", async () => {
      const place = newPlace(who);
      const c = command(place, ["mcp", "--http", "--port", "0", "--cwd", place.cwd]);
      const server = spawn(c.file, c.argv, {
        cwd: place.cwd,
        env: c.env,
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      const exited = new Promise((resolve) => server.on("exit", resolve));
      try {
        const url = await new Promise<URL>((resolve, reject) => {
          server.stderr.setEncoding("utf8").on("data", (d: string) => {
            err += d;
            const m = /listening on (\S+)/.exec(err);
            if (m) resolve(new URL(m[1]));
          });
          exited.then((code) => reject(new Error(`nbagent mcp --http exited (${code}): ${err}`)));
        });
        const auth = { Authorization: `Bearer ${MCP_SECRET}` };
        const a = await httpClient(url, auth);
        const b = await httpClient(url, auth);
        const value = `victim-${randomBytes(8).toString("hex")}`;
        const run = async (client: typeof a, code: string) =>
          textOf(await client.callTool({ name: "python", arguments: { cells: [{ code }], timeout: 120 } }));
        assert.match(await run(a, `victim = ${JSON.stringify(value)}\nprint("set")`), /^set$/m);
        const seen = await run(b, hijackKernels(place.state, "victim"));
        assert.ok(!seen.includes(value), `client B read client A's variable:\n${seen}`);
        assertNoSecret(seen);
        assertBlocked(seen, ["kernels-dir", "hijack"]);
        const environ = await run(b, umountThenEnviron([SECRET, MCP_SECRET]));
        assertNoSecret(environ);
        assertBlocked(environ, ["umount-proc", "proc-secret"]);
        assert.match(await run(a, "print(victim)"), new RegExp(`^${value}$`, "m"), "A is untouched");
        await Promise.all([a.close(), b.close()]);
      } finally {
        server.kill("SIGTERM");
        await exited;
      }
    });

    test("3. the shared local gateway's token stays out of a named-session kernel (info.json, env, files, /proc)", async () => {
      const place = newPlace(who);
      try {
        const start = await nbagent(place, [
          "call",
          "python",
          JSON.stringify({ cells: [{ code: "print('up')" }] }),
          "--session",
          "s",
        ]);
        assert.equal(start.code, 0, start.stderr + start.stdout);
        const gateway = join(place.state, "gateway");
        const dirs = readdirSync(gateway).filter((d) => existsSync(join(gateway, d, "info.json")));
        assert.equal(dirs.length, 1, `gateway dirs: ${readdirSync(gateway)}`);
        const infoFile = join(gateway, dirs[0], "info.json");
        const token = JSON.parse(readFileSync(infoFile, "utf8")).token as string;
        assert.ok(token.length >= 16);
        const code = gatewayToken(place.state, infoFile, token);
        const r = await nbagent(place, [
          "call",
          "python",
          JSON.stringify({ cells: [{ code }], timeout: 120 }),
          "--session",
          "s",
        ]);
        assert.ok(!r.stdout.includes(token), `the token reached the model's text:\n${r.stdout}`);
        assertNoSecret(r.stdout);
        assertBlocked(r.stdout, ["gateway-info", "gateway-token"]);
      } finally {
        await nbagent(place, ["gateway", "stop"]);
      }
    });

    for (const sb of SANDBOXES) {
      test(`4. no privilege in the kernel (${sb.name}): no capabilities, no mount/umount/setns, /proc/sys, sysrq and /sys not writable, host pid 1 not visible${sb.args.length ? ", /var/tmp read-only" : ""}${sb.name.includes("net-off") ? ", no loopback" : ""}`, async () => {
        const netOff = sb.name.includes("net-off");
        const server = createServer((s) => {
          s.on("error", () => {});
          s.end("hi");
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
        const port = (server.address() as { port: number }).port;
        try {
          const opts = { sandbox: sb.args.length > 0, port: netOff ? port : undefined };
          const r = await runSnippet(who, systemProbe(opts), { args: sb.args });
          assert.doesNotMatch(r.text, /PROBE-ERROR|PROBE-EXIT/, r.text);
          assertBlocked(r.text, probeNames(opts));
        } finally {
          server.close();
        }
      });
    }

    test("5. artifact symlinks planted by the kernel: the outside file is untouched, the artifact tool never returns its content", async () => {
      const place = newPlace(who);
      const outside = join(place.dir, "outside-file");
      const marker = `OUTSIDE-${randomBytes(8).toString("hex")}`;
      writeFileSync(outside, `${marker}\n`, { mode: 0o600 });
      if (who === "nobody") own(outside);
      const before = statSync(outside);
      await withHost(place, [], {}, async (host) => {
        const r = await host.python(plantArtifactLinks(outside));
        // The host spills into a folder of its own (docs/isolation.md): the kernel never sees the spill
        // to plant beside it (PLANTED []); were it to, the links must still lead nowhere.
        assert.match(r.text, /PLANTED \[('[0-9a-z]+-[0-9a-f]{10}')?\]/, r.text);
        const id = /artifact:\/\/([0-9a-z]+-[0-9a-f]{10})/.exec(r.text)?.[1];
        assert.ok(id, `no artifact named in:\n${r.text}`);
        for (const ref of [id, "x"]) {
          const read = await host.call("artifact", { id: ref });
          assert.ok(
            !read.text.includes(marker),
            `the artifact tool returned the link target for ${ref}:\n${read.text}`,
          );
        }
      });
      assert.equal(readFileSync(outside, "utf8"), `${marker}\n`);
      assert.equal(statSync(outside).mtimeMs, before.mtimeMs);
    });

    test("6. nbagent run --sandbox --gateway URL is refused with an Error: (nothing runs)", async () => {
      const server = await startJupyterServer();
      const place = newPlace(who);
      try {
        const nb = join(place.cwd, "nb.ipynb");
        const cell = {
          cell_type: "code",
          id: "c0",
          execution_count: null,
          metadata: {},
          outputs: [],
          source: "open('ran', 'w').write('yes')",
        };
        const body = {
          cells: [cell],
          metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
          nbformat: 4,
          nbformat_minor: 5,
        };
        writeFileSync(nb, JSON.stringify(body));
        if (who === "nobody") own(nb);
        const before = readFileSync(nb, "utf8");
        const r = await nbagent(place, ["run", "--sandbox", "--gateway", server.url, nb], {
          NBAGENT_GATEWAY_TOKEN: server.token,
        });
        assert.notEqual(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stderr + r.stdout, /Error:.*sandbox/i, r.stdout + r.stderr);
        assert.equal(readFileSync(nb, "utf8"), before);
        assert.equal(existsSync(join(place.cwd, "ran")), false, "the notebook ran");
        assert.equal(existsSync(join(server.rootDir, "ran")), false, "the notebook ran on the gateway");
      } finally {
        await server.stop();
      }
    });

    for (const [how, code, signal] of [
      ["SIGKILL", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"],
      ["SIGTERM", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)", "SIGTERM"],
      ["os.abort()", "import os\nos.abort()", "SIGABRT"],
    ] as const) {
      test(`7. a kernel that kills itself (${how}) is reported dead by ${signal}; the next call works in a new kernel`, async () => {
        await withHost(newPlace(who), [], {}, async (host) => {
          const set = await host.python("x = 1\nprint('set')");
          assert.match(set.text, /^set$/m);
          const r = await host.python(code);
          assert.doesNotMatch(r.text, /\(no output\)|SIGSEGV/, r.text);
          assert.match(r.text, new RegExp(`The kernel died while cell 1 ran \\(.*${signal}`), r.text);
          assert.match(r.text, /all state is gone/);
          const after = await host.python("print('after', 'x' in globals())");
          assert.match(after.text, /^after False$/m, after.text);
        });
      });
    }

    test("8. orphans are reaped: grandchildren whose parent is gone leave no zombie; interrupts still reach a running cell", async () => {
      await withHost(newPlace(who), [], {}, async (host) => {
        const spawnOrphans = [
          "import os, subprocess",
          "r, w = os.pipe()",
          // sh starts three readers in the background and exits: they are orphans of the namespace.
          "p = subprocess.Popen(['sh', '-c', 'cat >/dev/null & cat >/dev/null & cat >/dev/null & exit 0'], stdin=r)",
          "print('sh exit', p.wait())",
          "os.close(r); os.close(w)  # EOF: the orphans exit now",
        ].join("\n");
        const first = await host.python(spawnOrphans);
        assert.match(first.text, /^sh exit 0$/m, first.text);
        const count = [
          "import os, time",
          "def cats():",
          "    out = []",
          "    for p in os.listdir('/proc'):",
          "        try:",
          "            s = open('/proc/%s/stat' % p).read()",
          "        except OSError:",
          "            continue",
          "        if p.isdigit() and '(cat)' in s:",
          "            out.append(s.rsplit(')', 1)[1].split()[0])",
          "    return out",
          // Waits until no cat is alive (each is gone or a zombie): bounded by the call's timeout.
          "while any(s != 'Z' for s in cats()):",
          "    time.sleep(0.05)",
          "for _ in range(100):  # a reaper gets some time to reap the last one",
          "    if not cats(): break",
          "    time.sleep(0.05)",
          "z = [p for p in os.listdir('/proc') if p.isdigit() and open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0] == 'Z']",
          "print('ATTACK zombies: %s %d zombies' % ('ESCAPED' if z else 'blocked', len(z)))",
        ].join("\n");
        const second = await host.python(count);
        assertBlocked(second.text, ["zombies"]);
        await assertInterruptWorks(host);
      });
    });

    test("9. a fork bomb and a memory hog in one session hit their limits; another session keeps its state and the host works", async () => {
      const limits = { NBAGENT_MAX_PROCESSES: "64", NBAGENT_MEMORY_LIMIT: "256M" };
      await withHost(newPlace(who), [], limits, async (host) => {
        const keep = await host.python("kept = 42\nprint('kept')", { session: "keep" });
        assert.match(keep.text, /^kept$/m);
        const bomb = await host.python(
          [
            "import os",
            "r, w = os.pipe()",
            "kids, why = [], 'none'",
            "for i in range(300):  # bounded: 300 is far above the limit of 64",
            "    try:",
            "        pid = os.fork()",
            "    except OSError as e:",
            "        why = e.__class__.__name__",
            "        break",
            "    if pid == 0:",
            "        os.close(w)",
            "        os.read(r, 1)",
            "        os._exit(0)",
            "    kids.append(pid)",
            "os.close(w)",
            "for k in kids: os.waitpid(k, 0)",
            "print('ATTACK fork-bomb: %s %d processes started (%s)' % ('ESCAPED' if len(kids) >= 300 else 'blocked', len(kids), why))",
          ].join("\n"),
          { session: "bomb" },
        );
        assert.doesNotMatch(bomb.text, /ATTACK fork-bomb: ESCAPED/, bomb.text);
        if (who === "root")
          assert.match(
            bomb.text,
            /reached the kernel's limit of 64 processes and threads/,
            `the text does not name the process limit:\n${bomb.text}`,
          );
        const hog = await host.python(
          [
            "chunks = []",
            "for i in range(16):  # bounded: 1 GiB in 64 MiB steps, 4 times the limit",
            "    chunks.append(b'x' * (64 << 20))",
            "print('ATTACK memory-hog: ESCAPED %d MiB held' % (64 * len(chunks)))",
          ].join("\n"),
          { session: "bomb" },
        );
        assert.doesNotMatch(hog.text, /ATTACK memory-hog: ESCAPED \d+ MiB/, hog.text); // not the traceback's source line
        // As root a cgroup's out-of-memory killer ends the kernel and the death names the limit; as
        // nobody RLIMIT_DATA refuses the allocation (MemoryError) and the kernel lives on.
        if (who === "root")
          assert.match(
            hog.text,
            /hit its memory limit of 256 MiB/,
            `the text does not name the memory limit:\n${hog.text}`,
          );
        else assert.match(hog.text, /MemoryError/, hog.text);
        const kept = await host.python("print(kept)", { session: "keep" });
        assert.match(kept.text, /^42$/m, kept.text);
        const fine = await host.python("print(6 * 7)");
        assert.match(fine.text, /^42$/m);
      });
    });
  });
}
