/**
 * A working directory that is nbagent's state directory itself (NBAGENT_STATE_DIR=. in a project;
 * docs/isolation.md, "nbagent's state hidden"): the kernel starts, works there and sees the user's
 * files, but not what nbagent keeps there — other kernels' connection files, the shared gateway's
 * token, other sessions' outputs and artifacts, the named-session registries, the view's sockets.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { nbagent, tempDir } from "./helpers.js";

test("cwd = the state directory: the kernel runs there and sees none of nbagent's state folders' contents", async () => {
  const dir = await tempDir();
  writeFileSync(join(dir, "mine.txt"), "the user's file");
  const planted: Record<string, string> = {
    "gateway/0123456789abcdef/info.json": '{"token":"shared-gateway-token"}',
    "sessions/other/outputs/x.log": "another session's output",
    "sessions/other/artifacts/y.txt": "another session's artifact",
    "named-sessions/abc.json": '{"kept":"registry"}',
    [`kernels/kernel-${process.pid}-00000000-0000-0000-0000-000000000000.json`]: '{"key":"other-kernel-key"}',
    "view/sock-info.json": '{"view":"socket"}',
  };
  for (const [rel, text] of Object.entries(planted)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  const code = [
    "import os, json",
    "seen = {}",
    "for top, _, files in os.walk('.'):",
    "    for f in files:",
    "        p = os.path.join(top, f)[2:]",
    "        try:",
    "            seen[p] = open(p).read()",
    "        except OSError as e:",
    "            seen[p] = 'error %d' % e.errno",
    "print(json.dumps(seen, sort_keys=True))",
  ].join("\n");
  const r = await nbagent(["call", "python", JSON.stringify({ cells: [{ code }] }), "--json", "--cwd", dir], {
    cwd: dir,
    env: { NBAGENT_STATE_DIR: dir },
  });
  assert.equal(r.code, 0, r.stderr);
  const text = JSON.parse(r.stdout).content[0].text as string;
  const seen = JSON.parse(
    text
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .pop()!,
  ) as Record<string, string>;
  assert.equal(seen["mine.txt"], "the user's file", "the user's files are there");
  for (const [rel, secret] of Object.entries(planted)) {
    assert.equal(seen[rel], undefined, `${rel} is not visible`);
    assert.ok(!text.includes(secret), `${secret} never reaches the kernel`);
  }
  // Its own connection file is the only one in kernels/.
  const own = Object.keys(seen).filter((p) => p.startsWith("kernels/"));
  assert.equal(own.length, 1, JSON.stringify(own));
});
