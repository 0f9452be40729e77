/**
 * The notebook file against unusual files and permissions (docs/notebook-tool.md, "Files"): a FIFO
 * path, a 0-byte or garbage lock, a read-only notebook for a non-root user, owner/group/mode and
 * setgid kept, hard links, leftovers of a killed save, `~` paths. Real files, real processes,
 * real users (setpriv) and signals.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { chmod, chown, link, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { lockPathFor, withFileLock } from "../../src/notebook/lock.js";
import { createNotebookTool, type NotebookParams } from "../../src/tools/notebook/notebook.js";
import { readJson, tempDir, writeNotebook } from "./helpers.js";

const CHILD = new URL("./tool-child.ts", import.meta.url).pathname;
const isRoot = process.getuid?.() === 0;
const NOBODY = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

/** A folder user nobody can reach and write (the test run's own temp folder is root's, 0700). */
async function nobodysDir(): Promise<string> {
  const dir = await mkdtemp("/tmp/nbagent-nobody-");
  made.push(dir);
  await chmod(dir, 0o777);
  return dir;
}
const made: string[] = [];
after(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));

function text(r: { content: { type: string; text?: string }[] }): string {
  return r.content[0]?.type === "text" ? (r.content[0].text ?? "") : "";
}

/** One tool call in a child process (optionally as user nobody); its result and the child. */
function child(cwd: string, params: object, opts: { stay?: boolean; asNobody?: boolean } = {}) {
  const args = ["--import", "tsx", CHILD, cwd, JSON.stringify(params), ...(opts.stay ? ["stay"] : [])];
  const proc = opts.asNobody
    ? spawn("setpriv", [...NOBODY, process.execPath, ...args], {
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, TMPDIR: "/tmp" },
      })
    : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const result = new Promise<{ isError: boolean; text: string }>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once("line", (l) => resolve(JSON.parse(l)));
    proc.once("exit", (code) => reject(new Error(`child exited (${code}) without a result`)));
  });
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((r) =>
    proc.once("exit", (c, s) => r([c, s])),
  );
  return { proc, result, exit };
}

const edit = (path: string, content = "changed"): NotebookParams => ({
  action: "edit",
  notebook_path: path,
  cell_index: 0,
  content,
});

describe("non-regular files", () => {
  test("a FIFO at the notebook path: clear Error at once, nothing opened, and the process still exits on SIGTERM", async () => {
    const dir = await tempDir();
    execFileSync("mkfifo", [join(dir, "pipe.ipynb")]);
    for (const params of [
      { action: "read", notebook_path: "pipe.ipynb" } as NotebookParams,
      edit("pipe.ipynb"),
      { action: "insert", notebook_path: "pipe.ipynb", cell_index: 0, content: "x" } as NotebookParams,
    ]) {
      const r = await createNotebookTool({ cwd: dir }).execute("t", params);
      assert.equal(r.isError, true);
      assert.equal(
        text(r),
        `Error: Notebook path is a named pipe (FIFO), not a notebook file: pipe.ipynb. Nothing was read or written. Full path: ${dir}/pipe.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
      );
    }
    // In its own process, which then gets SIGTERM: it exits (no thread is stuck opening the FIFO).
    const c = child(dir, { action: "read", notebook_path: "pipe.ipynb" }, { stay: true });
    assert.match((await c.result).text, /^Error: Notebook path is a named pipe \(FIFO\)/);
    c.proc.kill("SIGTERM");
    assert.deepEqual(await c.exit, [143, null]);
    assert.deepEqual(await readdir(dir), ["pipe.ipynb"]);
  });

  test("a folder or a device at the notebook path is named as such", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "d.ipynb"));
    const tool = createNotebookTool({ cwd: dir });
    assert.equal(
      text(await tool.execute("t", { action: "read", notebook_path: "d.ipynb" } as NotebookParams)),
      `Error: Notebook path is a folder, not a notebook file: d.ipynb. Nothing was read or written. Full path: ${dir}/d.ipynb (relative paths resolve against ${dir}, this session's working directory).`,
    );
    assert.equal(
      text(await tool.execute("t", edit("/dev/zero"))),
      `Error: Notebook path is a character device, not a notebook file: /dev/zero. Nothing was read or written. (Relative paths resolve against ${dir}, this session's working directory.)`,
    );
  });
});

describe("lock left by a crash", () => {
  for (const [name, content] of [
    ["0-byte", ""],
    ["garbage", "\u0000\u0001not json"],
  ] as const) {
    test(`a ${name} lock file is stale at once: the lock is taken without waiting, and a save goes through`, async () => {
      const dir = await tempDir();
      const path = await writeNotebook(join(dir, "nb.ipynb"), [{ source: "a" }]);
      await writeFile(lockPathFor(path), content);
      // Timeout 0: only a lock judged stale on first sight can be taken.
      let inside = false;
      await withFileLock(
        path,
        async () => {
          inside = true;
        },
        0,
      );
      assert.ok(inside);
      await writeFile(lockPathFor(path), content);
      const r = await createNotebookTool({ cwd: dir }).execute("t", edit("nb.ipynb"));
      assert.equal(text(r), 'Replaced cell 0 (code, id cell-0; old source "a"). Notebook now has 1 cell.');
      assert.deepEqual((await readJson(path)).cells[0].source, ["changed"]);
      assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
    });
  }
});

describe("permissions", () => {
  const skip = isRoot ? false : "needs root to switch to user nobody and to chown";

  test("a notebook the user may not write: Error, file unchanged (as user nobody)", { skip }, async () => {
    const dir = await nobodysDir(); // nobody may write the folder, so a rename would succeed
    const theirs = await writeNotebook(join(dir, "root.ipynb"), [{ source: "a" }]);
    await chmod(theirs, 0o644); // root's file
    const own = await writeNotebook(join(dir, "own.ipynb"), [{ source: "a" }]);
    await chown(own, 65534, 65534);
    await chmod(own, 0o444); // nobody's own, read-only
    for (const [name, mode, uid] of [
      ["root.ipynb", "0644", 0],
      ["own.ipynb", "0444", 65534],
    ] as const) {
      const before = await readFile(join(dir, name));
      const ino = (await stat(join(dir, name))).ino;
      const { result } = child(dir, edit(name), { asNobody: true });
      const r = await result;
      assert.equal(r.isError, true);
      assert.equal(
        r.text,
        `Error: Notebook is read-only for this user: ${name} (mode ${mode}, owner uid ${uid}, uid here 65534). Nothing was written; make it writable first if it should be changed.`,
      );
      assert.deepEqual(await readFile(join(dir, name)), before);
      assert.equal((await stat(join(dir, name))).ino, ino);
    }
    assert.deepEqual((await readdir(dir)).sort(), ["own.ipynb", "root.ipynb"]);
  });

  test("owner, group, mode and the setgid bit are kept (root)", { skip }, async () => {
    const dir = await tempDir();
    const path = await writeNotebook(join(dir, "nb.ipynb"), [{ source: "a" }]);
    await chown(path, 65534, 4242);
    await chmod(path, 0o2664);
    const r = await createNotebookTool({ cwd: dir }).execute("t", edit("nb.ipynb"));
    assert.equal(text(r), 'Replaced cell 0 (code, id cell-0; old source "a"). Notebook now has 1 cell.');
    const st = await stat(path);
    assert.equal(st.mode & 0o7777, 0o2664);
    assert.equal(st.uid, 65534);
    assert.equal(st.gid, 4242);
    assert.deepEqual((await readJson(path)).cells[0].source, ["changed"]);
  });

  test("what a non-root save cannot keep is said in the result (as user nobody)", { skip }, async () => {
    const dir = await nobodysDir();
    const path = await writeNotebook(join(dir, "shared.ipynb"), [{ source: "a" }]);
    await chmod(path, 0o666); // root's, but anyone may write it
    const r = await child(dir, edit("shared.ipynb"), { asNobody: true }).result;
    assert.equal(
      r.text,
      'Replaced cell 0 (code, id cell-0; old source "a"). Notebook now has 1 cell.\nNote: the saved file has owner uid 65534 (was 0), group gid 65534 (was 0): this user may not give a file that ownership and mode.',
    );
    const st = await stat(path);
    assert.equal(st.mode & 0o777, 0o666);
    assert.deepEqual((await readJson(path)).cells[0].source, ["changed"]);
  });
});

describe("hard links", () => {
  test("a save replaces the file: the result says the other name keeps the old version", async () => {
    const dir = await tempDir();
    const path = await writeNotebook(join(dir, "nb.ipynb"), [{ source: "a" }]);
    await link(path, join(dir, "other.ipynb"));
    const before = await readFile(path);
    const tool = createNotebookTool({ cwd: dir });
    const r = await tool.execute("t", edit("nb.ipynb"));
    assert.equal(
      text(r),
      'Replaced cell 0 (code, id cell-0; old source "a"). Notebook now has 1 cell.\nNote: nb.ipynb had 1 other hard link; the save wrote a new file, so that name still shows the old version.',
    );
    assert.deepEqual(await readFile(join(dir, "other.ipynb")), before);
    // The link is broken now: the next save says nothing more.
    const again = await tool.execute("t", edit("nb.ipynb", "again"));
    assert.equal(
      text(again),
      'Replaced cell 0 (code, id cell-0; old source "changed"). Notebook now has 1 cell.',
    );
  });
});

describe("leftovers of a killed save", () => {
  test("a save killed mid-write leaves a temp copy; the next save removes it", async () => {
    const dir = await tempDir();
    // Big enough that the writer is caught while its temp file exists.
    const big = "x".repeat(1 << 20); // 20 cells of 1 MB
    await writeNotebook(
      join(dir, "nb.ipynb"),
      Array.from({ length: 20 }, (_, i) => ({ source: `${i}${big}` })),
    );
    for (;;) {
      const c = child(dir, edit("nb.ipynb", "killed"));
      // Wait until the temp copy appears (or the save finished first: then try again).
      let temp: string | undefined;
      const finished = c.result.then(
        () => true,
        () => true,
      );
      let done = false;
      void finished.then(() => {
        done = true;
      });
      while (!done && !temp) {
        temp = (await readdir(dir)).find((n) => n.endsWith(".tmp"));
        await new Promise((r) => setImmediate(r));
      }
      if (temp) {
        c.proc.kill("SIGKILL");
        await c.exit;
        if ((await readdir(dir)).includes(temp)) break;
      } else await c.exit;
    }
    assert.equal((await readdir(dir)).filter((n) => n.endsWith(".tmp")).length, 1);
    const r = await createNotebookTool({ cwd: dir }).execute("t", edit("nb.ipynb", "after"));
    assert.equal(r.isError, undefined, text(r));
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
  });
});

describe("paths", () => {
  test("~ is the home folder, as in the python tool", async () => {
    const home = await tempDir();
    await writeNotebook(join(home, "nb.ipynb"), [{ source: "a" }]);
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const r = await createNotebookTool({ cwd: "/" }).execute("t", edit("~/nb.ipynb"));
      assert.equal(text(r), 'Replaced cell 0 (code, id cell-0; old source "a"). Notebook now has 1 cell.');
      assert.deepEqual((await readJson(join(home, "nb.ipynb"))).cells[0].source, ["changed"]);
    } finally {
      process.env.HOME = saved;
    }
  });
});
