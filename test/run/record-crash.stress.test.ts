/**
 * A python session's record (runtime/session-record.ts, written through a descriptor kept open)
 * after its process is SIGKILLed mid-call: every entry of the calls that had answered is in the
 * file, whole, and the file reads back as those entries and nothing torn.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { SessionRecord } from "../../src/runtime/session-record.js";
import { marker, pidsWithEnv, spawnNbagent, tempDir, waitFor } from "./helpers.js";

let root: string;
before(async () => {
  root = await tempDir("nbagent-record-crash-");
});
after(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test("SIGKILL during a call: the record holds the earlier calls' entries, whole", async () => {
  const work = join(root, "work");
  const state = join(root, "state");
  await mkdir(work);
  const m = marker();
  const child = spawnNbagent(["batch", "--cwd", work], {
    env: { NBAGENT_STATE_DIR: state, [m.name]: m.value },
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const call = (cells: string[]) =>
    child.stdin.write(
      `${JSON.stringify({ tool: "python", params: { cells: cells.map((code) => ({ code })) } })}\n`,
    );
  try {
    call(["x = 41\nprint('first')", "x + 1"]);
    const first = JSON.parse((await lines.next()).value as string);
    assert.equal(first.isError, false, JSON.stringify(first));
    call(["print('second')"]);
    assert.equal(JSON.parse((await lines.next()).value as string).isError, false);
    // A third call, stopped in its cell: the process is killed while it runs.
    call(["import os, time\nopen('ready', 'w').close()\nwhile True:\n    time.sleep(0.05)"]);
    await waitFor("the third call's cell to start", () => existsSync(join(work, "ready")), 45_000);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    for (const pid of await pidsWithEnv(m.name, m.value)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }
  const dir = join(state, "sessions", "default", "records");
  const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
  assert.equal(files.length, 1, `one record left by the killed process: ${files}`);
  const path = join(dir, files[0]);
  const text = readFileSync(path, "utf8");
  assert.ok(text.endsWith("\n"), "no torn last line");
  for (const line of text.split("\n").filter(Boolean)) JSON.parse(line);
  const entries = await new SessionRecord(path, true).read();
  assert.deepEqual(
    entries.map((e) =>
      e.type === "kernel"
        ? `kernel ${e.event.kind}`
        : `${e.source.split("\n")[0]} → ${JSON.stringify(e.outputs.map((o) => o.text ?? (o.data as Record<string, string>)?.["text/plain"]))}`,
    ),
    ["kernel start", 'x = 41 → ["first\\n"]', 'x + 1 → ["42"]', "print('second') → [\"second\\n\"]"],
  );
});
