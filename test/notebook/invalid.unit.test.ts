/**
 * Already-invalid notebooks (docs/notebook-tool.md, "Invalid notebooks"): real files, Python's
 * nbformat as the oracle. Every result says the file was invalid and what nbformat would reject;
 * the edit is made and keeps the rest as it was; a shared cell id is refused as an address.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { call, PYTHON, tempDir, text } from "./helpers.js";

const run = promisify(execFile);
const ORACLE = new URL("./invalid_oracle.py", import.meta.url).pathname;

interface Verdict {
  valid: boolean;
  errors: [number | null, string][];
}

async function oracle(path: string): Promise<Verdict> {
  const { stdout } = await run(PYTHON, [ORACLE, path], { maxBuffer: 1 << 24 });
  return (JSON.parse(stdout) as Record<string, Verdict>)[path];
}

type Nb = { cells: Record<string, unknown>[]; [k: string]: unknown };

function base(minor = 5): Nb {
  const cells: Record<string, unknown>[] = [
    { cell_type: "markdown", metadata: {}, source: ["# title"] },
    { cell_type: "code", execution_count: 1, metadata: {}, outputs: [], source: ["x = 1"] },
    { cell_type: "code", execution_count: null, metadata: {}, outputs: [], source: ["y = 2"] },
  ];
  if (minor >= 5) {
    cells.forEach((c, i) => {
      c.id = `c${i}`;
    });
  }
  return { cells, metadata: {}, nbformat: 4, nbformat_minor: minor };
}

interface Case {
  name: string;
  /** The notebook's JSON text. */
  json: string;
  /** A line the result must contain (the finding, worded). */
  line: RegExp;
  /** nbformat.validate accepts it (NaN where the schema allows any number). */
  nbformatAccepts?: boolean;
}

function edit(f: (nb: Nb) => void, minor = 5): string {
  const nb = base(minor);
  f(nb);
  return JSON.stringify(nb, null, 1);
}

const CASES: Case[] = [
  {
    name: "NaN in metadata",
    json: edit((nb) => ((nb.metadata as Record<string, unknown>).score = "@NAN@")).replace('"@NAN@"', "NaN"),
    line: /- notebook metadata\.score is NaN: not JSON/,
    nbformatAccepts: true,
  },
  {
    name: "Infinity as an execution count",
    json: edit((nb) => (nb.cells[1].execution_count = "@INF@")).replace('"@INF@"', "Infinity"),
    line: /- cell 1 \(id c1\) execution_count is NaN, must be integer or null/,
  },
  {
    name: "unknown cell type",
    json: edit((nb) => (nb.cells[0].cell_type = "heading")),
    line: /- cell 0 \(id c0\): unknown cell_type "heading" \(nbformat 4\.5 knows "code", "markdown", "raw"\)/,
  },
  {
    name: "cell ids in nbformat 4.4",
    json: edit((nb) => (nb.cells[2].id = "old"), 4),
    line: /- cell 2 \(id old\): has an id, which nbformat 4\.4 does not allow/,
  },
  {
    name: "negative execution_count",
    json: edit((nb) => (nb.cells[1].execution_count = -3)),
    line: /- cell 1 \(id c1\) execution_count is -3, must be >= 0/,
  },
  {
    name: "missing outputs",
    json: edit((nb) => delete nb.cells[1].outputs),
    line: /- cell 1 \(id c1\): "outputs" is missing/,
  },
  {
    name: "missing notebook metadata",
    json: edit((nb) => delete nb.metadata),
    line: /- notebook: "metadata" is missing/,
  },
  {
    name: "outputs on a markdown cell",
    json: edit((nb) => (nb.cells[0].outputs = [])),
    line: /- cell 0 \(id c0\): "outputs" is not allowed here in nbformat 4\.5/,
  },
  {
    name: "stream output without text",
    json: edit((nb) => (nb.cells[1].outputs = [{ output_type: "stream", name: "stdout" }])),
    line: /- cell 1 \(id c1\) output 0: "text" is missing/,
  },
  {
    name: "duplicate ids",
    json: edit((nb) => (nb.cells[2].id = "c0")),
    line: /- cells 0 and 2 share id "c0"/,
  },
];

describe("invalid notebooks", () => {
  for (const c of CASES) {
    test(`${c.name}: read and edit say so; the edit keeps the rest as it was`, async () => {
      const dir = await tempDir();
      const path = join(dir, "bad.ipynb");
      await writeFile(path, c.json);
      const before = await oracle(path);
      assert.equal(before.valid, c.nbformatAccepts === true, JSON.stringify(before));

      const r = await call(dir, { action: "read", notebook_path: "bad.ipynb" });
      assert.match(
        text(r),
        /^bad\.ipynb: 3 cells, nbformat 4\.\d\nInvalid notebook: bad\.ipynb does not pass nbformat's checks; /,
      );
      assert.match(text(r), c.line);

      // An edit of a cell that is fine: done, and the note says the file was (and is) invalid.
      const e = await call(dir, {
        action: "edit",
        notebook_path: "bad.ipynb",
        cell_index: 1,
        content: "x = 10",
      });
      assert.ok(!e.isError, text(e));
      const t = text(e);
      assert.match(t, /^Replaced cell 1 .*\n\nNote: bad\.ipynb was invalid before this call; /);
      assert.match(t, c.line);
      assert.match(t, /It still is: the save changed only what was asked/);
      const after = await oracle(path);
      assert.equal(after.valid, before.valid, "the save neither repairs nor breaks the file");
      assert.ok(after.errors.length <= before.errors.length, JSON.stringify(after.errors));
      assert.match(await readFile(path, "utf8"), /x = 10/);
    });
  }

  test("our findings name the cells nbformat's schema names", async () => {
    const dir = await tempDir();
    for (const c of CASES.filter((x) => !x.nbformatAccepts && x.name !== "duplicate ids")) {
      const path = join(dir, "bad.ipynb");
      await writeFile(path, c.json);
      const verdict = await oracle(path);
      const theirs = new Set(verdict.errors.slice(1).map(([cell]) => (cell === null ? "top" : String(cell))));
      const r = await call(dir, { action: "read", notebook_path: "bad.ipynb" });
      const ours = new Set(
        (r.details.warnings ?? [])
          .filter((w) => !/not JSON/.test(w))
          .map((w) => /^cell (\d+)/.exec(w)?.[1] ?? "top"),
      );
      assert.deepEqual([...ours].sort(), [...theirs].sort(), `${c.name}: ${JSON.stringify(verdict.errors)}`);
    }
  });

  test("NaN: Python's json reads it, JSON.parse does not; the edit keeps it verbatim", async () => {
    const dir = await tempDir();
    const path = join(dir, "bad.ipynb");
    await writeFile(path, CASES[0].json);
    assert.throws(() => JSON.parse(CASES[0].json));
    const e = await call(dir, { action: "edit", notebook_path: "bad.ipynb", cell_index: 2, content: "z" });
    assert.match(text(e), /it is not valid JSON:\n- notebook metadata\.score is NaN: not JSON/);
    assert.match(text(e), /NaN and Infinity are not JSON: Python's json reads them, but JupyterLab/);
    assert.match(await readFile(path, "utf8"), /"score": NaN/);
  });

  test("a shared id is refused as an address, naming the cells; nothing changes on disk", async () => {
    const dir = await tempDir();
    const path = join(dir, "bad.ipynb");
    await writeFile(path, CASES.find((c) => c.name === "duplicate ids")!.json);
    const bytes = await readFile(path);
    for (const action of ["edit", "delete", "read"]) {
      const params: Record<string, unknown> = { action, notebook_path: "bad.ipynb", cell_id: "c0" };
      if (action === "edit") params.content = "boom";
      const r = await call(dir, params);
      assert.equal(
        text(r),
        'Error: Cell id "c0" is shared by cells 0, 2 in bad.ipynb, so it does not say which cell; use cell_index (one of 0, 2) instead. Nothing was changed.',
      );
      assert.deepEqual(await readFile(path), bytes);
    }
    const ok = await call(dir, { action: "delete", notebook_path: "bad.ipynb", cell_index: 2 });
    assert.match(text(ok), /After this change it passes nbformat's checks\./);
    assert.equal((await oracle(path)).valid, true);
  });

  test("an edit that removes the problem says the file passes now", async () => {
    const dir = await tempDir();
    const path = join(dir, "bad.ipynb");
    await writeFile(path, CASES.find((c) => c.name === "unknown cell type")!.json);
    const r = await call(dir, {
      action: "edit",
      notebook_path: "bad.ipynb",
      cell_index: 0,
      content: "# title",
      cell_type: "markdown",
    });
    assert.match(text(r), /^Replaced cell 0 \(markdown, id c0; was heading; old source "[^"]*"\)/);
    assert.match(text(r), /After this change it passes nbformat's checks\./);
    assert.equal((await oracle(path)).valid, true);
  });

  test("a valid notebook's results carry no note", async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, "ok.ipynb"),
      edit(() => {}),
    );
    const r = await call(dir, { action: "edit", notebook_path: "ok.ipynb", cell_index: 1, content: "a" });
    assert.equal(text(r), 'Replaced cell 1 (code, id c1; old source "x = 1"). Notebook now has 3 cells.');
    const read = await call(dir, { action: "read", notebook_path: "ok.ipynb" });
    assert.doesNotMatch(text(read), /Invalid/);
  });

  test("the generated validators match the vendored schemas", async () => {
    await run(process.execPath, ["scripts/gen-nbformat-validators.mjs", "--check"]);
  });
});
