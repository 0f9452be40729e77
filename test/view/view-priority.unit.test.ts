/**
 * `nbagent view` yields to the work it watches (docs/view.md "Cost"): once it serves, every thread
 * of it runs at nice VIEW_NICE; the browser it opens is started before that, at the priority the
 * view was started with. The browser opener is a stand-in `xdg-open` on PATH (there is no desktop
 * here) that writes what it was given, and its own /proc stat line, into a FIFO the test reads.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { VIEW_NICE } from "../../src/cli/view-command.js";
import { parseProcStat } from "../../src/sys/proc.js";
import { cliCommand } from "../cli.js";
import { tempDir } from "../mcp/helpers.js";
import { threadNices } from "../sys/thread-nices.js";

test("nbagent view opens the browser at its own priority, then runs every thread at nice VIEW_NICE", async (t) => {
  const dir = await tempDir("nbagent-view-nice-");
  const fifo = join(dir, "opened");
  execFileSync("mkfifo", [fifo]);
  const opener = join(dir, "xdg-open");
  writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n%s\\n' "$1" "$(cat /proc/$$/stat)" > '${fifo}'\n`);
  chmodSync(opener, 0o755);
  const [cmd, ...pre] = cliCommand();
  const view = spawn(cmd, [...pre, "view", "--port", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
  });
  t.after(() => view.kill("SIGKILL"));
  const lines = createInterface({ input: view.stdout });
  const [url] = (await once(lines, "line")) as [string];
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+$/);
  // Blocks until the opener has written (a FIFO opens once both ends are there).
  const [given, stat] = readFileSync(fifo, "utf8").split("\n");
  assert.equal(given, url, "the browser is opened at the URL printed");
  const own = parseProcStat(readFileSync(`/proc/${process.pid}/stat`, "latin1"))!.nice;
  assert.equal(parseProcStat(stat)?.nice, own, "the browser does not inherit the view's lower priority");
  // The view lowers itself right after starting the opener: the stat answers once it has.
  const res = await fetch(url.replace(/\/\?token=.*$/, "/api/state"), {
    headers: { Authorization: `Bearer ${url.split("token=")[1]}` },
  });
  assert.equal(res.status, 200);
  const nices = threadNices(view.pid!);
  assert.ok(nices.size > 1, "its main thread and node's own");
  for (const [tid, nice] of nices) assert.ok(nice >= VIEW_NICE, `thread ${tid} at nice ${nice}`);
  view.kill("SIGINT");
  const [code] = await once(view, "exit");
  assert.equal(code, 0, "Ctrl-C stops it cleanly");
});
