// The notebook tool's replace action (docs/notebook-tool.md, "replace"): exact old → new within one
// cell, the match unique unless all: true; every refusal an Error: that leaves the file
// byte-identical, a missing match naming the closest line, and the result naming where it changed.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { call, readJson, tempDir, text, writeNotebook } from "./helpers.js";

const CELL = "import numpy as np\nx = np.arange(10)\ny = x * 2\nprint(y.sum())\ny = x * 2\n";

async function setUp() {
  const dir = await tempDir();
  const path = await writeNotebook(join(dir, "r.ipynb"), [{ source: "# title" }, { source: CELL }]);
  return { dir, path, before: await readFile(path) };
}

const source = async (path: string, i: number) => {
  const s = (await readJson(path)).cells[i].source;
  return Array.isArray(s) ? s.join("") : s;
};

test("a unique match is replaced; the result names the cell, its line and the count", async () => {
  const { dir, path } = await setUp();
  const r = await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "np.arange(10)",
    new: "np.arange(20)",
  });
  assert.equal(r.isError, undefined, text(r));
  assert.match(
    text(r),
    /^Replaced 1 occurrence in cell 1 \(code(, id [\w-]+)?; line 2 of its source before the change\)\. Notebook now has 2 cells\.$/,
  );
  assert.equal(await source(path, 1), CELL.replace("np.arange(10)", "np.arange(20)"));
  assert.equal(await source(path, 0), "# title", "other cells untouched");
});

test("several matches: refused with their lines unless all: true, which replaces each", async () => {
  const { dir, path, before } = await setUp();
  const params = {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "y = x * 2",
    new: "y = x * 3",
  };
  const refused = await call(dir, params);
  assert.equal(refused.isError, true);
  assert.equal(
    text(refused),
    "Error: old occurs 2 times in cell 1 of r.ipynb (lines 3 and 5); nothing was changed. Give old with enough surrounding text to match once, or pass all: true to replace every occurrence.",
  );
  assert.deepEqual(await readFile(path), before, "byte-identical");
  const r = await call(dir, { ...params, all: true });
  assert.match(text(r), /^Replaced 2 occurrences in cell 1 .*lines 3 and 5 of its source before the change/);
  assert.equal(await source(path, 1), CELL.replaceAll("y = x * 2", "y = x * 3"));
});

test("no match: the closest line is named, or the whitespace that differs; the file is unchanged", async () => {
  const { dir, path, before } = await setUp();
  const typo = await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "x = np.arrange(10)",
    new: "z",
  });
  assert.equal(
    text(typo),
    'Error: No match for old in cell 1 of r.ipynb; nothing was changed. The closest line is line 2: "x = np.arange(10)".',
  );
  const spaced = await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "y  =  x * 2\nprint(y.sum())",
    new: "z",
  });
  assert.match(
    text(spaced),
    /^Error: No match for old in cell 1 of r\.ipynb; nothing was changed\. It matches if spaces, tabs and line breaks are ignored/,
  );
  const far = await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 0,
    old: "qqqq",
    new: "z",
  });
  assert.match(text(far), /No line of the cell is close to it; read the cell \(cell_index 0\)/);
  assert.deepEqual(await readFile(path), before, "byte-identical");
});

test("no match for a part of a line: the closest span is named with its line and column", async () => {
  const dir = await tempDir();
  const path = await writeNotebook(join(dir, "p.ipynb"), [
    { source: "import pandas as pd\nmonthly = df.set_index('date').resample('ME').sum()\nprint(monthly)" },
  ]);
  const before = await readFile(path);
  const r = await call(dir, {
    action: "replace",
    notebook_path: "p.ipynb",
    cell_index: 0,
    old: 'resample("ME")',
    new: "resample('MS')",
  });
  assert.equal(
    text(r),
    `Error: No match for old in cell 0 of p.ipynb; nothing was changed. The closest text is on line 2, column 32: "resample('ME')" (the line: "monthly = df.set_index('date').resample('ME').sum()").`,
  );
  assert.deepEqual(await readFile(path), before, "byte-identical");
  // Spans as far from old: the one as long as old (its closing quote kept), not a shorter one.
  await writeNotebook(join(dir, "m.ipynb"), [{ source: "pd.merge(df, df, on='nope')" }]);
  const quotes = await call(dir, {
    action: "replace",
    notebook_path: "m.ipynb",
    cell_index: 0,
    old: 'on="nope"',
    new: "on='key'",
  });
  assert.match(text(quotes), / The closest text is on line 1, column 18: "on='nope'" /);
});

test("bad parameters: old and new required, old non-empty, a cell needed, content refused", async () => {
  const { dir, path, before } = await setUp();
  const cases: [Record<string, unknown>, string][] = [
    [
      { cell_index: 1, new: "z" },
      "Error: replace needs old (the exact text to change) and new (its replacement).",
    ],
    [
      { cell_index: 1, old: "x" },
      'Error: replace needs new (the text that takes old\'s place; "" removes it).',
    ],
    [
      { cell_index: 1, old: "", new: "z" },
      'Error: old must be a non-empty string (the exact text to change), got ""',
    ],
    [{ old: "x", new: "z" }, "Error: replace needs cell_index or cell_id (exactly one)."],
    [
      { cell_index: 1, old: "x", new: "z", content: "x" },
      "Error: content goes with edit and insert, not replace.",
    ],
    [
      { cell_index: 1, old_string: "x", new: "z" },
      'Error: Unknown parameter "old_string" (did you mean old?).',
    ],
  ];
  for (const [extra, want] of cases) {
    const r = await call(dir, { action: "replace", notebook_path: "r.ipynb", ...extra });
    assert.equal(r.isError, true, JSON.stringify(extra));
    assert.ok(text(r).startsWith(want), `got: ${text(r)}\nwant: ${want}`);
  }
  assert.deepEqual(await readFile(path), before, "byte-identical");
});

test("new may be empty (removes old); replacement text with $ patterns is taken literally", async () => {
  const { dir, path } = await setUp();
  await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "import numpy as np\n",
    new: "",
  });
  await call(dir, {
    action: "replace",
    notebook_path: "r.ipynb",
    cell_index: 1,
    old: "print(y.sum())",
    new: "print('$&$1')",
  });
  assert.equal(await source(path, 1), "x = np.arange(10)\ny = x * 2\nprint('$&$1')\ny = x * 2\n");
});
