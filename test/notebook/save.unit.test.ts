/** notebook/ file layer: atomic save, mode kept, refusal on concurrent change, lock recovery, id upgrade. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, readdir, readFile, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  changedOnDisk,
  createCell,
  loadNotebook,
  NotebookFileError,
  saveNotebook,
  setCellSource,
  splitLines,
  thawCell,
  upgradeToCellIds,
} from "../../src/notebook/index.js";
import { LockTimeoutError, lockPathFor, withFileLock } from "../../src/notebook/lock.js";
import { Oracle, PYTHON, readJson, tempDir, writeNotebook } from "./helpers.js";

let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

async function sample(dir: string, minor = 5): Promise<string> {
  return writeNotebook(join(dir, "nb.ipynb"), [{ source: "a" }, { source: "b", type: "markdown" }], minor);
}

describe("atomic save", () => {
  test("keeps the file mode and leaves no temp file", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    await chmod(path, 0o640);
    const loaded = await loadNotebook(path);
    setCellSource(thawCell(loaded.notebook, 0), "changed");
    await saveNotebook(loaded);
    assert.equal((await stat(path)).mode & 0o777, 0o640);
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
    assert.deepEqual((await readJson(path)).cells[0].source, ["changed"]);
  });

  test("refuses when the file changed on disk since it was read, even with same size and mtime", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const loaded = await loadNotebook(path);
    const original = await readFile(path, "utf8");
    const st = await stat(path);
    // Same length, same mtime, different content, same inode (an in-place writer).
    const other = original.replace('"a"', '"z"');
    await writeFile(path, other);
    await utimes(path, st.atime, st.mtime);
    setCellSource(thawCell(loaded.notebook, 1), "mine");
    await assert.rejects(saveNotebook(loaded), (e: unknown) => {
      assert.ok(e instanceof NotebookFileError);
      assert.equal(e.code, "conflict");
      assert.match(e.message, /^Notebook changed on disk since it was read/);
      return true;
    });
    assert.equal(await readFile(path, "utf8"), other, "the other writer's version survives");
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
  });

  test("refuses when the file was replaced or deleted; a saved model can be saved again", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const loaded = await loadNotebook(path);
    setCellSource(thawCell(loaded.notebook, 0), "one");
    await saveNotebook(loaded);
    setCellSource(thawCell(loaded.notebook, 0), "two");
    await saveNotebook(loaded); // its own previous save is not a conflict
    const stale = await loadNotebook(path);
    await writeNotebook(path, [{ source: "replaced" }]);
    await assert.rejects(saveNotebook(stale), /changed on disk/);
    const gone = await loadNotebook(path);
    const { unlink } = await import("node:fs/promises");
    await unlink(path);
    await assert.rejects(saveNotebook(gone), /deleted or moved/);
  });
});

describe("racy fingerprints (ctime within a timestamp tick of the load)", () => {
  // A write in the same tick as the load can leave every stat field as it was; only the bytes tell.
  // Such a write cannot be made on purpose, so the test makes the recorded bytes differ instead:
  // what a check that compares bytes sees, and one that trusts stat does not.
  const tamper = (loaded: { fingerprint: { content: Buffer[] } }) => {
    const [first, ...rest] = loaded.fingerprint.content;
    loaded.fingerprint.content = [Buffer.concat([Buffer.from("X"), first.subarray(1)]), ...rest];
  };

  test("within the tick every check compares the bytes", async () => {
    const dir = await tempDir();
    const loaded = await loadNotebook(await sample(dir));
    loaded.fingerprint.racy = true;
    loaded.fingerprint.racyEnds = Date.now() + 3_600_000;
    assert.equal(await changedOnDisk(loaded), undefined);
    assert.equal(loaded.fingerprint.racy, true, "still within the tick: stays racy");
    tamper(loaded);
    assert.equal(await changedOnDisk(loaded), "its content changed");
  });

  test("a check after the tick that finds the same bytes settles it: then stat alone decides", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const loaded = await loadNotebook(path);
    loaded.fingerprint.racy = true;
    loaded.fingerprint.racyEnds = Date.now() - 1;
    assert.equal(await changedOnDisk(loaded), undefined);
    assert.equal(loaded.fingerprint.racy, false);
    tamper(loaded);
    assert.equal(await changedOnDisk(loaded), undefined, "no byte comparison once settled");
    // A real write afterwards (another size, so whatever tick it lands in) is still seen.
    await writeFile(path, `${await readFile(path, "utf8")}\n`);
    assert.equal(await changedOnDisk(loaded), "it was modified");
  });

  test("a check after the tick that finds other bytes reports the change and stays racy", async () => {
    const dir = await tempDir();
    const loaded = await loadNotebook(await sample(dir));
    loaded.fingerprint.racy = true;
    loaded.fingerprint.racyEnds = Date.now() - 1;
    tamper(loaded);
    assert.equal(await changedOnDisk(loaded), "its content changed");
    assert.equal(loaded.fingerprint.racy, true);
  });
});

describe("lock file", () => {
  test("a lock left by a dead process is taken over", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const dead = spawn(process.execPath, ["-e", ""]);
    const pid = dead.pid!;
    await new Promise((r) => dead.on("close", r));
    await writeFile(lockPathFor(path), JSON.stringify({ pid, host: hostname(), nonce: "old" }));
    const loaded = await loadNotebook(path);
    setCellSource(thawCell(loaded.notebook, 0), "after stale lock");
    await saveNotebook(loaded);
    assert.deepEqual((await readJson(path)).cells[0].source, ["after stale lock"]);
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
  });

  test("a live holder makes others wait, then time out with a clear error", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let entered!: () => void;
    const inside = new Promise<void>((r) => {
      entered = r;
    });
    const holder = withFileLock(path, async () => {
      entered();
      await held;
    });
    await inside;
    await assert.rejects(
      withFileLock(path, async () => {}, 100),
      LockTimeoutError,
    );
    const order: string[] = [];
    const waiter = withFileLock(path, async () => {
      order.push("waiter");
    });
    order.push("release");
    release();
    await holder;
    await waiter;
    assert.deepEqual(order, ["release", "waiter"]);
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
  });
});

describe("cell ids", () => {
  test("explicit upgrade 4.4 → 4.5 gives every cell a unique id at once", async () => {
    const dir = await tempDir();
    const path = await sample(dir, 4);
    const loaded = await loadNotebook(path);
    upgradeToCellIds(loaded.notebook);
    loaded.notebook.cells.push(createCell(loaded.notebook, "code", "new"));
    await saveNotebook(loaded);
    const nb = await readJson(path);
    assert.equal(nb.nbformat_minor, 5);
    const ids = nb.cells.map((c: { id: string }) => c.id);
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 3);
    const v = await oracle.check(path);
    assert.ok(v.valid && v.canonical, v.error ?? "");
  });
});

describe("splitLines", () => {
  test("matches Python's str.splitlines(keepends=True)", async () => {
    const samples = [
      "",
      "a",
      "a\n",
      "a\nb",
      "\n\n",
      "a\r\nb\rc\n",
      "x\u2028y\u2029z\u0085w\u000bv\u000cu\u001cq\u001dr\u001es",
      "\r",
      "\r\r\n",
    ];
    const { execFileSync } = await import("node:child_process");
    const out = execFileSync(
      PYTHON,
      ["-c", "import json,sys; print(json.dumps([s.splitlines(True) for s in json.load(sys.stdin)]))"],
      {
        input: JSON.stringify(samples),
      },
    );
    assert.deepEqual(samples.map(splitLines), JSON.parse(String(out)));
  });
});
