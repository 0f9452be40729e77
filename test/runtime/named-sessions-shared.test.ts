/**
 * Named sessions on the shared local gateway (docs/backends.md): with no gateway configured, a named
 * session (CLI --session) starts the shared gateway on demand and a later process re-attaches; out of fds:
 * kernel creation failing with "Too many open files" in the gateway (a real low open-files limit,
 * inherited by the gateway from the process that started it) drops the tracked sessions, stops the
 * gateway and retries once on a new one; another process's named session then says its state is gone.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { localGatewayStatus, stopLocalGateway } from "../../src/kernel/gateway/local-server.js";
import { TEST_PYTHON } from "../python.js";

const python = TEST_PYTHON;
const root = mkdtempSync(join(tmpdir(), "nbagent-named-shared-"));
const cwd = join(root, "work");
mkdirSync(cwd);
const states: string[] = [];
after(async () => {
  for (const stateRoot of states) await stopLocalGateway({ python, stateRoot }).catch(() => false);
  rmSync(root, { recursive: true, force: true });
});

function stateDir(name: string): string {
  const dir = mkdtempSync(join(root, `${name}-`));
  states.push(dir);
  return dir;
}

const named = fileURLToPath(new URL("./fixtures/named-child.ts", import.meta.url));
const emfile = fileURLToPath(new URL("./fixtures/shared-emfile-child.ts", import.meta.url));

/** `nbagent call python … --session NAME` in a process of its own (no gateway configured). */
async function sessionCall(state: string, session: string, code: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", named, "shared", "", state, cwd, session, code],
    { timeout: 180_000 },
  );
  return (JSON.parse(stdout.trim().split("\n").pop()!) as { text: string }).text;
}

/** Sessions opened one by one on the shared gateway, by a process with at most `nofile` open files. */
async function limited(state: string, nofile: number, count: number) {
  const { stdout } = await promisify(execFile)(
    "prlimit",
    [`--nofile=${nofile}:${nofile}`, process.execPath, "--import", "tsx", emfile, state, cwd, String(count)],
    { timeout: 600_000 },
  );
  return JSON.parse(stdout.trim().split("\n").pop()!) as {
    ok: boolean;
    kept: number[];
    pids: number[];
    error?: string;
  };
}

test("--session with no gateway configured: the shared gateway starts on demand and a later process re-attaches", async () => {
  const state = stateDir("session");
  const first = await sessionCall(state, "s", "x = 41");
  const id = first.match(
    /^Note: named session "s" is new: kernel ([0-9a-f-]{36}) was started for it on the gateway\./m,
  )?.[1];
  assert.ok(id, first);
  const gateway = await localGatewayStatus({ python, stateRoot: state });
  assert.ok(gateway, "the shared gateway runs on after the first process ended");
  const second = await sessionCall(state, "s", "x + 1");
  assert.ok(
    second.startsWith(`Note: named session "s" re-attached to its running kernel ${id} on the gateway`),
    second,
  );
  assert.match(second, /^42$/m);
});

test("out of fds on the shared gateway: EMFILE in the gateway → sessions dropped, gateway restarted, start retried once", async () => {
  const state = stateDir("s22");
  // The first process starts the shared gateway, which inherits its low open-files limit.
  assert.equal((await limited(state, 120, 1)).ok, true);
  const keep = await sessionCall(state, "keep", "v = 1");
  assert.match(keep, /named session "keep" is new/);

  const r = await limited(state, 120, 12);
  assert.equal(r.ok, true, r.error);
  assert.equal(r.kept.length, 12);
  // the kept sessions fell back (dropped) once, and the gateway was replaced at that point
  const at = r.kept.findIndex((n, i) => i > 0 && n < r.kept[i - 1]);
  assert.ok(at > 0, `kept sessions: ${r.kept}`);
  assert.notEqual(r.pids[at], r.pids[at - 1], `gateway pids: ${r.pids}`);
  assert.equal(new Set(r.pids.slice(at)).size, 1);

  // Another process's named session lived on the old gateway: its next call says the state is gone.
  const after = await sessionCall(state, "keep", "v");
  assert.match(
    after,
    /^Note: This session's kernel was no longer on the gateway when this call looked for it at \d\d:\d\d:\d\d \(last used at \d\d:\d\d:\d\d\); why it ended is not known here \(the gateway may have culled it, or been restarted\)\. This call runs in a new kernel: variables, imports and other state from earlier calls are gone\.\n/,
  );
  assert.match(after, /NameError: name 'v' is not defined/);
});
