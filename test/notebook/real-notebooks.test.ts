/**
 * Real notebooks shipped with Debian's python3-nbclient (written by various Jupyter versions):
 * unchanged load+save is byte-identical when nbformat would also reproduce the file, and an edit
 * gives exactly nbformat's bytes for the same edit; every result validates.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { loadNotebook, parseJson, saveNotebook } from "../../src/notebook/index.js";
import { call, Oracle, PYTHON, tempDir, text } from "./helpers.js";

const run = promisify(execFile);
// NBAGENT_REAL_NOTEBOOKS=DIR runs the same checks on every .ipynb under DIR (a checkout of notebooks).
const SOURCE = process.env.NBAGENT_REAL_NOTEBOOKS ?? "/usr/lib/python3/dist-packages/nbclient/tests/files";
const HERE = new URL(".", import.meta.url).pathname;

test("real notebooks (nbclient's test files by default): round trip and edits match nbformat", async (t) => {
  const names = await readdir(SOURCE, { recursive: true }).catch(() => [] as string[]);
  const notebooks = names.filter((n) => n.endsWith(".ipynb"));
  if (notebooks.length === 0) {
    t.skip(`no notebooks in ${SOURCE}`);
    return;
  }
  const dir = await tempDir();
  const oracle = new Oracle();
  try {
    const jobs: {
      src: string;
      dst: string;
      index: number;
      source: string;
      name: string;
      canonical: boolean;
    }[] = [];
    for (const [i, name] of notebooks.entries()) {
      const src = join(dir, `orig-${i}.ipynb`);
      await copyFile(join(SOURCE, name), src);
      const verdict = await oracle.check(src);
      const cells = (parseJson(await readFile(src, "utf8")) as { cells: unknown[] }).cells.length;
      if (!verdict.valid || cells === 0) continue;
      jobs.push({
        src,
        dst: join(dir, `py-${i}.ipynb`),
        index: cells - 1,
        source: "edited\nby test",
        name,
        canonical: verdict.canonical,
      });
    }
    assert.ok(jobs.length >= 10, `${jobs.length} usable notebooks`);
    const jobFile = join(dir, "jobs.json");
    await writeFile(jobFile, JSON.stringify(jobs));
    await run(PYTHON, [join(HERE, "py_edit.py"), jobFile]);
    for (const job of jobs) {
      const before = await readFile(job.src);
      const loaded = await loadNotebook(job.src);
      await saveNotebook(loaded);
      if (job.canonical) assert.deepEqual(await readFile(job.src), before, `${job.name}: unchanged save`);
      const r = await call(dir, {
        action: "edit",
        notebook_path: job.src,
        cell_index: job.index,
        content: job.source,
      });
      assert.equal(r.isError, undefined, text(r));
      if (job.canonical)
        assert.equal(await readFile(job.src, "utf8"), await readFile(job.dst, "utf8"), job.name);
      const v = await oracle.check(job.src);
      assert.ok(v.valid, `${job.name}: ${v.error}`);
    }
  } finally {
    oracle.close();
  }
});
