/**
 * `nbagent call`'s view socket (docs/view.md, "Across processes"): a call that lasts opens it with
 * every event it had, so a viewer that connects then sees the call from its start; a call that ends
 * at once (a notebook read) never opens one. And its result, written straight to stdout's
 * descriptor, ends quietly with 141 when the reader has gone (docs/cli.md).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, watch, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { socketRoot } from "../../src/kernel/local/connection-file.js";
import { spawnNbagent, tempDir } from "../run/helpers.js";

const LONG = { timeout: 180_000 };

/** A one-cell notebook at dir/name. */
function smallNotebook(dir: string, name: string): string {
  const nb = join(dir, name);
  const cell = {
    cell_type: "code",
    id: "c1",
    source: "x = 1",
    metadata: {},
    outputs: [],
    execution_count: null,
  };
  writeFileSync(nb, JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [cell] }));
  return nb;
}

/** The view folder's entries named for `pid`, seen by watching it while `during` runs. */
async function socketsOf(pid: () => number | undefined, during: Promise<unknown>): Promise<string[]> {
  const dir = join(socketRoot()!, "view");
  const seen = new Set<string>();
  const look = (name: string | null) => {
    const p = pid();
    if (name && p !== undefined && name.includes(`-${p}-`)) seen.add(name);
  };
  const watcher = watch(dir, (_, name) => look(name));
  try {
    await during;
  } finally {
    watcher.close();
  }
  for (const name of readdirSync(dir)) look(name);
  return [...seen];
}

test("a notebook read through nbagent call ends before any view socket opens", LONG, async () => {
  const dir = await tempDir("nbagent-call-host-");
  const nb = smallNotebook(dir, "a.ipynb");
  const child = spawnNbagent(["call", "notebook", JSON.stringify({ action: "read", notebook_path: nb })]);
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stdin.end();
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const sockets = await socketsOf(() => child.pid, exited);
  assert.equal(await exited, 0);
  assert.match(stdout, /a\.ipynb: 1 cell/);
  assert.deepEqual(sockets, [], "no socket (nor its .binding- name) was made for a call that short");
});

test(
  "a call that lasts opens its view socket, whose snapshot has the call from its start",
  LONG,
  async () => {
    const dir = await tempDir("nbagent-call-host-");
    const started = join(dir, "started");
    const release = join(dir, "release");
    const code = `import os, time\nopen(${JSON.stringify(started)}, "w").close()\nwhile not os.path.exists(${JSON.stringify(release)}):\n    time.sleep(0.01)\nprint("released")`;
    const child = spawnNbagent(["call", "python", JSON.stringify({ cells: [{ code }] })]);
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stdin.end();
    const exited = new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    // The cell is running: wait for the host's socket (the call has run well past 200 ms by now).
    while (!existsSync(started)) await new Promise((resolve) => setTimeout(resolve, 20));
    const viewDir = join(socketRoot()!, "view");
    const mine = () =>
      readdirSync(viewDir).find((n) => n.startsWith(`host-${child.pid}-`) && n.endsWith(".sock"));
    while (!mine()) await new Promise((resolve) => setTimeout(resolve, 20));
    const socket = connect(join(viewDir, mine()!));
    const lines = createInterface({ input: socket });
    const snapshot = await new Promise<{ type: string; host: { kind: string }; calls: { tool: string }[] }>(
      (resolve) => lines.once("line", (line) => resolve(JSON.parse(line))),
    );
    socket.destroy();
    assert.equal(snapshot.type, "snapshot");
    assert.equal(snapshot.host.kind, "call");
    // call-started came before the socket: the snapshot holds it, and the call is still running.
    assert.deepEqual(
      snapshot.calls.map((c) => [c.tool, "ended" in c]),
      [["python", false]],
    );
    writeFileSync(release, "");
    assert.equal(await exited, 0);
    assert.match(stdout, /released/);
    assert.equal(mine(), undefined, "the socket went with the host");
  },
);

test("nbagent call whose reader closed stdout before the result ends quietly with 141", LONG, async () => {
  const dir = await tempDir("nbagent-call-host-");
  const nb = smallNotebook(dir, "b.ipynb");
  const child = spawnNbagent(["call", "notebook", JSON.stringify({ action: "read", notebook_path: nb })]);
  // Closed before the child could write anything (node has not even started its script).
  child.stdout.destroy();
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  child.stdin.end();
  const exit = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  assert.equal(exit, 141, stderr);
  assert.equal(stderr, "", "no stack trace, no words: nobody reads the rest");
});
