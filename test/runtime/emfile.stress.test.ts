/** Out of file descriptors with a real fd limit: kernel starts that hit EMFILE free the idle sessions and retry once. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = mkdtempSync(join(tmpdir(), "nbagent-emfile-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("EMFILE at kernel start: idle sessions are disposed and the start retried", async () => {
  const child = fileURLToPath(new URL("./fixtures/emfile-child.ts", import.meta.url));
  const { stdout } = await promisify(execFile)(
    "/bin/sh",
    ["-c", `ulimit -n 70 && exec "$0" --import tsx "$@"`, process.execPath, child, root, root, "6"],
    { timeout: 120_000 },
  );
  const r = JSON.parse(stdout.trim().split("\n").pop()!);
  assert.equal(r.ok, true, r.error);
  assert.equal(r.kept.length, 6);
  // the number of kept sessions fell back at least once: EMFILE was hit and handled
  assert.ok(
    r.kept.some((n: number, i: number) => i > 0 && n <= r.kept[i - 1] - 1),
    `kept sessions: ${r.kept}`,
  );
});
