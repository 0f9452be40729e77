/** Atomic replacement of a file (src/sys/atomic-write.ts). */
import assert from "node:assert/strict";
import { lstatSync } from "node:fs";
import { mkdtemp, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { tempPathBeside, writeFileAtomic, writeFileAtomicSync } from "../../src/sys/atomic-write.js";

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "nbagent-sys-atomic-"));
}

const writers = {
  async: writeFileAtomic,
  sync: async (...args: Parameters<typeof writeFileAtomicSync>) => writeFileAtomicSync(...args),
};

for (const [kind, write] of Object.entries(writers)) {
  test(`${kind}: replaces the file with exactly the given mode and leaves no temp file`, async () => {
    const dir = await tempDir();
    const file = join(dir, "state.json");
    await writeFile(file, "old", { mode: 0o644 });
    await write(file, "new", { mode: 0o640, fsync: true });
    assert.equal(await readFile(file, "utf8"), "new");
    assert.equal(lstatSync(file).mode & 0o777, 0o640);
    await write(file, "newer");
    assert.equal(await readFile(file, "utf8"), "newer");
    assert.equal(lstatSync(file).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(dir), ["state.json"]);
  });

  test(`${kind}: a link planted at the file is replaced, never followed`, async () => {
    const dir = await tempDir();
    const victim = join(dir, "victim");
    await writeFile(victim, "keep me");
    const file = join(dir, "state.json");
    await symlink(victim, file);
    await write(file, "mine");
    assert.equal(await readFile(victim, "utf8"), "keep me");
    assert.ok(lstatSync(file).isFile());
    assert.equal(await readFile(file, "utf8"), "mine");
    assert.deepEqual((await readdir(dir)).sort(), ["state.json", "victim"]);
  });

  test(`${kind}: a failed write leaves nothing behind and throws`, async () => {
    const dir = await tempDir();
    // The target is a folder: the rename fails after the temp file was written.
    const file = join(dir, "sub");
    await writeFile(join(dir, "other"), "x");
    await import("node:fs/promises").then((fs) => fs.mkdir(join(file, "inner"), { recursive: true }));
    await assert.rejects(write(file, "data"));
    assert.deepEqual((await readdir(dir)).sort(), ["other", "sub"]);
  });
}

test("temp names are fresh each time and sit beside the file, hidden, with the writer's pid", () => {
  const a = tempPathBeside("/x/y/nb.ipynb");
  const b = tempPathBeside("/x/y/nb.ipynb");
  assert.notEqual(a, b);
  assert.match(a, new RegExp(`^/x/y/\\.nb\\.ipynb\\.nbagent-${process.pid}-[0-9a-f]{8}\\.tmp$`));
});
