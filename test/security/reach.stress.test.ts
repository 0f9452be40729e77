/**
 * Issue 29, "kernels that cannot reach each other or the host's processes" (docs/isolation.md): each
 * attack runs as kernel code through the real tools of the built CLI (harness.ts), in hosts that run
 * as root and as nobody, and must FAIL — and the victim it aims at (a process group of the test's, a
 * host IPC object, another session's output, the end of a gateway's kernels) must be untouched.
 * Snippets: reach-snippets.ts; host-side parts: reach-helpers.ts. The test names say which attack.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { textOf } from "../mcp/helpers.js";
import {
  type Answer,
  assertBlocked,
  asWho,
  type Host,
  type Json,
  nbagent,
  newPlace,
  PRINCIPALS,
  runSnippet,
  SANDBOXES,
  setUp,
  type Who,
  withHost,
} from "./harness.js";
import {
  descendants,
  fdInode,
  forkServersOf,
  hostNamespace,
  IpcVictims,
  localGateway,
  McpHttp,
  mcpPython,
  type ProcInfo,
  stillRuns,
  Victim,
  waitFor,
} from "./reach-helpers.js";
import {
  forkServerPipe,
  holdLifeline,
  hostIpc,
  kernelSurface,
  SURFACE_NAMES,
  snoopIopub,
  victimPrints,
} from "./reach-snippets.js";

setUp();

const FORK_NAMES = [
  "forkserver-pipe",
  "pidfd-getfd-init",
  "proc-fd-open-init",
  "ptrace-init",
  "process-vm-readv-init",
  "kcmp-init",
];

function stopFileIn(dir: string): string {
  return join(dir, `.attack-stop-${randomBytes(6).toString("hex")}`);
}

/** One tool call of some host (a batch host, an MCP client). */
type Call = (tool: string, params: Json) => Promise<Answer>;

const hostCall =
  (host: Host): Call =>
  (tool, params) =>
    host.call(tool, params);

const mcpCall =
  (client: Awaited<ReturnType<McpHttp["client"]>>): Call =>
  async (tool, params) => {
    const json = await client.callTool({ name: tool, arguments: params });
    return { text: textOf(json), isError: json.isError === true, json };
  };

const STILL_RUNNING = /^Still running/m;

/**
 * The snooping attack around a victim: the attacker's cell (snoopIopub) starts in the background
 * (wait 1 s) in `session`, is followed until it says SUBSCRIBED, then `victim()` runs (it prints its
 * marker for ~3 s), then the stop file ends the subscriptions and the attacker's whole text is read.
 */
async function snoopAround(
  attacker: Call,
  session: string | undefined,
  stopDir: string,
  marker: string,
  victim: () => Promise<string>,
): Promise<{ attack: string; victim: string }> {
  const stop = stopFileIn(stopDir);
  const code = snoopIopub({ marker, stopFile: stop });
  let r = await attacker("python", {
    cells: [{ code }],
    wait: 1,
    timeout: 300,
    ...(session ? { session } : {}),
  });
  let text = r.text;
  const run = /\brun (r\d+)/.exec(r.text)?.[1];
  let done = !run || !STILL_RUNNING.test(r.text);
  let victimText = "";
  try {
    while (!done && !/^SUBSCRIBED/m.test(text)) {
      r = await attacker("runs", { run_id: run, wait: 2 });
      text += `\n${r.text}`;
      done = !STILL_RUNNING.test(r.text);
    }
    assert.match(text, /^SUBSCRIBED/m, `the attacker did not get to subscribe:\n${text}`);
    victimText = await victim();
    assert.match(victimText, /victim done/, `the victim's cell did not run:\n${victimText}`);
  } finally {
    writeFileSync(stop, "");
  }
  while (!done) {
    r = await attacker("runs", { run_id: run, wait: 30 });
    text += `\n${r.text}`;
    done = !STILL_RUNNING.test(r.text);
  }
  return { attack: text, victim: victimText };
}

function newMarker(): string {
  return `VICTIM-OUTPUT-${randomBytes(8).toString("hex")}`;
}

/** A snooping result: the victim's marker is nowhere in the attacker's text, and the verdict says blocked. */
function assertNotSnooped(r: { attack: string }, marker: string): void {
  assert.ok(!r.attack.includes(marker), `the attacker's text holds the victim's output:\n${r.attack}`);
  assertBlocked(r.attack, ["iopub-snoop"]);
}

/** Host A (as `victimWho`) prints a marker while a kernel of host B (as `attackerWho`, with `args`)
 * snoops on every socket it can find; B never gets A's output. */
async function snoopAcrossHosts(victimWho: Who, attackerWho: Who, args: string[]): Promise<void> {
  const victimPlace = newPlace(victimWho);
  const place = newPlace(attackerWho);
  const marker = newMarker();
  await withHost(victimPlace, [], {}, async (victim) => {
    assert.match((await victim.python("print('up')")).text, /^up$/m);
    await withHost(place, args, {}, async (host) => {
      const r = await snoopAround(hostCall(host), undefined, place.cwd, marker, async () => {
        return (await victim.python(victimPrints(marker))).text;
      });
      assertNotSnooped(r, marker);
    });
  });
}

const RUNUSER =
  ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].find((p) => existsSync(p)) ?? "runuser";

for (const who of PRINCIPALS) {
  describe(`issue 29 reach attacks ${asWho(who)}`, { concurrency: false }, () => {
    test("1. fork-server pipe forgery: a forked kernel borrows its init's fds (pidfd_getfd, /proc/1/fd), ptraces, reads (process_vm_readv) and kcmps the init, forges fork-server replies naming the test's victim; the victim lives", async () => {
      const place = newPlace(who);
      const victim = new Victim(who);
      const stop = stopFileIn(place.cwd);
      try {
        await withHost(place, [], {}, async (host) => {
          for (const s of ["A", "B"]) {
            const up = await host.python("print('up')", { session: s });
            assert.match(up.text, /^up$/m, up.text);
          }
          // forkserver.ts: the second kernel of a kind starts the fork server; the third is forked.
          const servers = await waitFor("the fork server (started by the second kernel)", 60_000, () => {
            const found = forkServersOf(host.child.pid ?? 0);
            return found.length ? found : undefined;
          });
          const inodes = servers.flatMap((s) => [0, 1, 2].map((fd) => fdInode(s.pid, fd) ?? 0));
          assert.ok(!inodes.includes(0), `the fork servers' stdio: ${inodes}`);
          const attack = await host.python(
            forkServerPipe({ victim: victim.pid, hostInodes: inodes, stopFile: stop }),
            {
              session: "C",
            },
          );
          const forked = servers.some((s) => descendants(s.pid).length > 0);
          assert.ok(
            forked,
            `session C was not forked by a fork server (${servers.map((s) => s.pid)}):\n${attack.text}`,
          );
          // More kernels: the host sends the fork servers its next requests and reads their replies.
          const next: string[] = [];
          for (const s of ["D", "E", "F"]) {
            if (!victim.alive()) break;
            next.push(`${s}: ${(await host.python("print('up')", { session: s })).text}`);
          }
          writeFileSync(stop, "");
          assert.ok(
            victim.alive(),
            `the test's victim (pid ${victim.pid}) is ${victim.fate()} after more sessions started:\n` +
              `--- attacker (C) ---\n${attack.text}\n--- then ---\n${next.join("\n")}`,
          );
          assertBlocked(attack.text, FORK_NAMES);
        });
      } finally {
        writeFileSync(stop, "");
        victim.stop();
      }
    });

    test("2. loopback IOPub snooping: a forked kernel (session C, the third of a kind) SUBscribes to every listening loopback port and unix socket and never gets session A's output (one host)", async () => {
      const place = newPlace(who);
      const marker = newMarker();
      await withHost(place, [], {}, async (host) => {
        for (const s of ["A", "B"])
          assert.match((await host.python("print('up')", { session: s })).text, /^up$/m);
        const r = await snoopAround(hostCall(host), "C", place.cwd, marker, async () => {
          return (await host.python(victimPrints(marker), { session: "A" })).text;
        });
        const servers = forkServersOf(host.child.pid ?? 0);
        assert.ok(
          servers.some((s) => descendants(s.pid).length > 0),
          `session C was not forked:\n${r.attack}`,
        );
        assertNotSnooped(r, marker);
      });
    });

    test("2. loopback IOPub snooping: a second host's kernel (same user) never gets the first host's output", async () => {
      await snoopAcrossHosts(who, who, []);
    });

    if (who === "nobody")
      test("2. loopback IOPub snooping: a nobody --sandbox kernel never gets a root host's kernel output", async () => {
        await snoopAcrossHosts("root", "nobody", ["--sandbox"]);
      });

    test("2. loopback IOPub snooping: a local kernel never gets a shared local gateway --session kernel's output", async () => {
      const place = newPlace(who);
      const marker = newMarker();
      const gatewayCall = (code: string) =>
        nbagent(place, [
          "call",
          "python",
          JSON.stringify({ cells: [{ code }], timeout: 120 }),
          "--session",
          "s",
        ]);
      try {
        const up = await gatewayCall("print('up')");
        assert.equal(up.code, 0, up.stderr + up.stdout);
        await withHost(place, [], {}, async (host) => {
          const r = await snoopAround(hostCall(host), undefined, place.cwd, marker, async () => {
            const v = await gatewayCall(victimPrints(marker));
            return v.stdout + v.stderr;
          });
          assertNotSnooped(r, marker);
        });
      } finally {
        await nbagent(place, ["gateway", "stop"]);
      }
    });

    test("2. loopback IOPub snooping: MCP over HTTP, client B's kernel never gets client A's output", async () => {
      const place = newPlace(who);
      const marker = newMarker();
      const server = await McpHttp.start(place);
      try {
        const a = await server.client();
        const b = await server.client();
        assert.match((await mcpPython(a, "print('up')")).text, /^up$/m);
        const r = await snoopAround(mcpCall(b), undefined, place.cwd, marker, async () => {
          return (await mcpPython(a, victimPrints(marker))).text;
        });
        assertNotSnooped(r, marker);
        await Promise.all([a.close(), b.close()]);
      } finally {
        await server.stop();
      }
    });

    test("2. loopback IOPub snooping, control: a --sandbox=net-off kernel (no loopback) never gets another host's output", async () => {
      await snoopAcrossHosts(who, who, ["--sandbox=net-off"]);
    });

    test("3. lifeline hold: a --session kernel on the shared local gateway holds its init's fd 0 (the lifeline FIFO) for writing; SIGKILL of the gateway still ends the kernel and its relay", async () => {
      const place = newPlace(who);
      let kernels: ProcInfo[] = [];
      try {
        const r = await nbagent(place, [
          "call",
          "python",
          JSON.stringify({ cells: [{ code: holdLifeline() }], timeout: 120 }),
          "--session",
          "s",
        ]);
        assert.equal(r.code, 0, r.stderr + r.stdout);
        assert.match(r.stdout, /^HOLDING \d/m, r.stdout);
        const gateway = localGateway(place.state);
        kernels = descendants(gateway.pid);
        assert.ok(
          kernels.some((p) => p.cmdline.includes("ipykernel") || p.cmdline.includes(gateway.dir)),
          `no kernel below the gateway ${gateway.pid}: ${kernels.map((p) => p.cmdline).join("\n")}`,
        );
        process.kill(gateway.pid, "SIGKILL");
        let left: ProcInfo[] = [];
        try {
          await waitFor("the gateway's kernels to end", 20_000, () =>
            kernels.some(stillRuns) ? undefined : true,
          );
        } catch {
          left = kernels.filter(stillRuns);
        }
        assert.deepEqual(
          left.map((p) => `${p.pid} ${p.cmdline.replace(/\s+/g, " ").slice(0, 200)}`),
          [],
          `processes of the gateway's kernel live on 20 s after the gateway was SIGKILLed:\n${r.stdout}`,
        );
        assertBlocked(r.stdout, ["lifeline-open", "lifeline-getfd"]);
      } finally {
        for (const p of kernels) if (stillRuns(p)) process.kill(p.pid, "SIGKILL");
        await nbagent(place, ["gateway", "stop"]);
      }
    });

    for (const sb of SANDBOXES) {
      test(`4. host IPC (${sb.name}): the kernel cannot attach or write the host's 0600 SysV shm segment, open its message queue, semaphore set or POSIX mqueue; the IPC namespace is its own`, async () => {
        const victims = new IpcVictims(who);
        try {
          const pattern = `ATTACK-${randomBytes(8).toString("hex")}`;
          assert.equal(pattern.length, victims.pattern.length);
          const code = hostIpc({
            key: victims.key,
            mqueue: victims.mqueue,
            pattern,
            hostIpcNs: hostNamespace("ipc"),
          });
          const r = await runSnippet(who, code, { args: sb.args });
          assert.equal(victims.bytes(), victims.pattern, `the kernel wrote the host's segment:\n${r.text}`);
          assertBlocked(r.text, ["ipc-namespace", "sysv-shm", "sysv-msg", "sysv-sem", "posix-mqueue"]);
        } finally {
          victims.remove();
        }
      });
    }

    for (const sb of SANDBOXES) {
      test(`5. kernel surface (${sb.name}): io_uring, unsafe personality flags, netlink audit/uevent and AF_VSOCK sockets fail; Docker-masked /proc files read empty; own cgroup namespace; no --confine= or state dir in any visible cmdline; NETLINK_ROUTE still works`, async () => {
        const place = newPlace(who);
        const code = kernelSurface({ hostCgroupNs: hostNamespace("cgroup"), secretPaths: [place.state] });
        const r = await runSnippet(who, code, { args: sb.args, place });
        assert.match(r.text, /^LEGIT netlink-route: ok/m, r.text);
        assertBlocked(r.text, SURFACE_NAMES);
      });
    }

    if (who === "nobody")
      test("5. relay argv: another user's ps (runuser -u nobody ps -eo args) shows no --confine= settings and no state dir beyond Jupyter's -f connection file while root hosts' kernels run (plain, --sandbox, gateway --session)", async () => {
        const place = newPlace("root");
        const sandboxed = newPlace("root");
        try {
          const up = await nbagent(place, [
            "call",
            "python",
            JSON.stringify({ cells: [{ code: "print('up')" }] }),
            "--session",
            "s",
          ]);
          assert.equal(up.code, 0, up.stderr + up.stdout);
          await withHost(place, [], {}, async (host) => {
            assert.match((await host.python("print('up')")).text, /^up$/m);
            await withHost(sandboxed, ["--sandbox"], {}, async (sb) => {
              assert.match((await sb.python("print('up')")).text, /^up$/m);
              const ps = spawnSync(RUNUSER, ["-u", "nobody", "--", "ps", "-eo", "args"], {
                encoding: "utf8",
                cwd: "/",
              });
              assert.equal(ps.status, 0, ps.stderr);
              const lines = ps.stdout.split("\n");
              const confine = lines.filter((l) => l.includes("--confine="));
              // Allowed, as Jupyter has them: a kernel's "-f <connection file>", the gateway
              // kernelspec's "--confine-file=<file>" and the gateway server's own folder argument.
              const allowed = (l: string) =>
                l
                  .replace(/ -f \S+\.json/g, "")
                  .replace(/--confine-file=\S+/g, "")
                  .replace(/ \S+\/gateway\/[0-9a-f]{16}(?= )/g, "");
              const state = lines
                .map(allowed)
                .filter((l) => l.includes(place.state) || l.includes(sandboxed.state));
              const show = (ls: string[]) => ls.map((l) => l.replace(/\s+/g, " ").slice(0, 240));
              assert.deepEqual(show(confine), [], "another user's ps shows the kernels' --confine= settings");
              assert.deepEqual(show(state), [], "another user's ps shows root's state dirs");
            });
          });
        } finally {
          await nbagent(place, ["gateway", "stop"]);
        }
      });
  });
}
