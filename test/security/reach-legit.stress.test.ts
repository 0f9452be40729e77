/**
 * What issue 29's defences (reach.test.ts: no reach to the init, the fork server, other kernels'
 * sockets, the host's IPC; a tighter seccomp filter) must leave working, as root and as nobody, with
 * and without the sandbox, in spawned and forked kernels: multiprocessing (SysV/POSIX semaphores
 * inside the kernel), numpy, matplotlib's savefig, subprocess and asyncio subprocesses (pidfd_open
 * on Python 3.12+, else a watcher thread), getaddrinfo (NETLINK_ROUTE), outbound TCP to a server the
 * test runs on 127.0.0.1 (without net-off), interrupts, and no orphans once the host has ended.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { createServer, type Server } from "node:net";
import { describe, test } from "node:test";
import { assertInterruptWorks, asWho, newPlace, PRINCIPALS, SANDBOXES, setUp, withHost } from "./harness.js";
import {
  descendants,
  forkServersOf,
  type ProcInfo,
  processTable,
  stillRuns,
  waitFor,
} from "./reach-helpers.js";

setUp();

/** The legitimate uses, one line each; `port` (a server on 127.0.0.1 that says "hi") when the kernel has a network. */
function legitCell(port: number | undefined): string {
  return `
import asyncio, multiprocessing, os, socket, subprocess, threading
import numpy
print("numpy", int(numpy.arange(10).sum()))
with multiprocessing.Pool(2) as pool:
    print("pool", pool.map(abs, [-1, -2, -3]))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.savefig("legit-fig.png")
plt.close("all")
print("savefig", os.path.getsize("legit-fig.png") > 0)
print("ls", subprocess.run(["ls"], capture_output=True).returncode)
async def sub():
    p = await asyncio.create_subprocess_exec("echo", "async-ok", stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate()
    return out.decode().strip(), p.returncode
got = []
t = threading.Thread(target=lambda: got.append(asyncio.run(sub())))
t.start()
t.join()
print("asyncio", got)
print("getaddrinfo", len(socket.getaddrinfo("localhost", 80)) > 0)
if ${port ?? 0}:
    with socket.create_connection(("127.0.0.1", ${port ?? 0}), timeout=30) as s:
        print("loopback", s.recv(16).decode())
`;
}

const LEGIT_LINES = [
  "numpy 45",
  "pool \\[1, 2, 3\\]",
  "savefig True",
  "ls 0",
  "asyncio \\[\\('async-ok', 0\\)\\]",
  "getaddrinfo True",
];

async function helloServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => {
    s.on("error", () => {});
    s.end("hi");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

function assertLegit(text: string, network: boolean): void {
  for (const line of [...LEGIT_LINES, ...(network ? ["loopback hi"] : [])])
    assert.match(text, new RegExp(`^${line}$`, "m"), text);
}

/** Starts a `sleep TAG` in a new session and one through a double fork: both outlive their parent. */
function orphanCell(tag: string): string {
  return `
import os, subprocess
subprocess.Popen(["sleep", "${tag}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", "${tag}"])
    os._exit(0)
os.waitpid(pid, 0)
print("started")
`;
}

for (const who of PRINCIPALS) {
  describe(`issue 29 legitimate paths ${asWho(who)}`, { concurrency: false }, () => {
    for (const sb of SANDBOXES) {
      const network = !sb.name.includes("net-off");
      test(`legit (${sb.name}): multiprocessing.Pool, numpy, matplotlib savefig, subprocess ls, asyncio subprocess, getaddrinfo${network ? ", TCP to a server on 127.0.0.1" : ""}`, async () => {
        const { server, port } = await helloServer();
        try {
          await withHost(newPlace(who), sb.args, {}, async (host) => {
            const r = await host.python(legitCell(network ? port : undefined));
            assert.equal(r.isError, false, r.text);
            assertLegit(r.text, network);
          });
        } finally {
          server.close();
        }
      });
    }

    test("legit in forked kernels (the third and fourth of a kind): the same uses, TCP to 127.0.0.1, and an interrupt", async () => {
      const { server, port } = await helloServer();
      try {
        await withHost(newPlace(who), [], {}, async (host) => {
          for (const s of ["A", "B"])
            assert.match((await host.python("print('up')", { session: s })).text, /^up$/m);
          const servers = await waitFor("the fork server (started by the second kernel)", 60_000, () => {
            const found = forkServersOf(host.child.pid ?? 0);
            return found.length ? found : undefined;
          });
          const r = await host.python(legitCell(port), { session: "C" });
          assert.ok(
            servers.some((s) => descendants(s.pid).length > 0),
            "session C was not forked by the fork server",
          );
          assert.equal(r.isError, false, r.text);
          assertLegit(r.text, true);
          await assertInterruptWorks(host);
        });
      } finally {
        server.close();
      }
    });

    for (const sb of SANDBOXES.slice(0, 2)) {
      test(`no orphans (${sb.name}): what kernels started in new sessions and through double forks is gone once the host ended${sb.args.length ? "" : " (spawned and forked kernels)"}`, async () => {
        const tag = `${86_400 + randomInt(1_000_000)}.${randomInt(1_000_000)}`;
        const mine = (p: ProcInfo) => p.cmdline === `sleep ${tag}`;
        let seen: ProcInfo[] = [];
        try {
          await withHost(newPlace(who), sb.args, {}, async (host) => {
            const sessions = sb.args.length ? ["A"] : ["A", "B", "C"];
            for (const s of sessions) {
              const r = await host.python(orphanCell(tag), { session: s });
              assert.match(r.text, /^started$/m, r.text);
            }
            seen = await waitFor("the kernels' sleeps", 30_000, () => {
              const found = processTable().filter(mine);
              return found.length >= 2 * sessions.length ? found : undefined;
            });
          });
          let left: ProcInfo[] = [];
          try {
            await waitFor("the orphans to end", 20_000, () => (processTable().some(mine) ? undefined : true));
          } catch {
            left = processTable().filter(mine);
          }
          assert.deepEqual(
            left.map((p) => `${p.pid} ${p.cmdline}`),
            [],
            "processes the kernels started live on after the host ended",
          );
        } finally {
          for (const p of [...seen, ...processTable().filter(mine)])
            if (stillRuns(p)) process.kill(p.pid, "SIGKILL");
        }
      });
    }
  });
}
