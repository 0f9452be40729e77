/**
 * checkNotebook's own bookkeeping, behind the tool texts that invalid.test.ts compares with Python's
 * nbformat: values are copied for the validators only where they hold a RawNumber, yet a NaN deep in
 * a cell is still named by its path; findings cached from the previous check follow a cell that
 * moved and are dropped for a cell that changed; outputs left as bytes are checked only in bulk.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  checkNotebook,
  loadNotebook,
  moveCell,
  type NotebookProblem,
  thawCell,
} from "../../src/notebook/index.js";
import { tempDir } from "./helpers.js";

const cell = (i: number, extra: Record<string, unknown> = {}) => ({
  cell_type: "code",
  execution_count: null,
  id: `c${i}`,
  metadata: {},
  outputs: [],
  source: [`x = ${i}\n`, "y = 2"],
  ...extra,
});

async function load(nb: unknown, replace: [string, string][] = []) {
  const dir = await tempDir();
  let text = JSON.stringify(nb, null, 1);
  for (const [from, to] of replace) text = text.replace(from, to);
  await writeFile(join(dir, "nb.ipynb"), text);
  return loadNotebook(join(dir, "nb.ipynb"));
}

const brief = (p: NotebookProblem) =>
  [p.kind, p.cell, p.output, p.field, p.key ?? p.value, p.expected].filter((x) => x !== undefined).join(" ");

describe("checkNotebook", () => {
  test("a NaN deep inside a cell is named by its path; exact floats elsewhere are no finding", async () => {
    const nb = {
      cells: [
        cell(0, { metadata: { deep: { list: [1.5, "@NAN@", { v: 2.25 }] }, collapsed: 0.5 } }),
        cell(1, { metadata: { "odd key": ["@INF@"] } }),
        cell(2, { source: "ok", metadata: { a: [1, 2.5, [3.75]] } }),
      ],
      metadata: { score: 0.125 },
      nbformat: 4,
      nbformat_minor: 5,
    };
    const loaded = await load(nb, [
      ['"@NAN@"', "NaN"],
      ['"@INF@"', "-Infinity"],
    ]);
    const check = await checkNotebook(loaded.notebook, { bulk: true, nonFinite: loaded.nonFinite });
    assert.deepEqual(check.problems.map(brief), [
      "not_json 0 metadata.deep.list[1] NaN",
      "wrong_type 0 metadata.collapsed 0.5 boolean",
      'not_json 1 metadata["odd key"][0] -Infinity',
    ]);
    assert.equal(check.outputsUnchecked, false);
  });

  test("a second check reuses unchanged cells' findings at their new places and re-checks changed ones", async () => {
    const nb = {
      cells: [cell(0), cell(1, { execution_count: -1 }), cell(2), cell(3, { id: "c0" })],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    };
    const loaded = await load(nb);
    const first = await checkNotebook(loaded.notebook, { bulk: true, nonFinite: 0 });
    assert.deepEqual(first.problems.map(brief), [
      "bad_value 1 execution_count -1 >= 0",
      "duplicate_id id c0",
    ]);
    assert.deepEqual(first.problems[1].cells, [0, 3]);

    moveCell(loaded.notebook, 1, 3);
    const moved = await checkNotebook(loaded.notebook, { bulk: true, nonFinite: 0 });
    assert.deepEqual(moved.problems.map(brief), [
      "bad_value 3 execution_count -1 >= 0",
      "duplicate_id id c0",
    ]);
    assert.equal(moved.problems[0].cellId, "c1");
    assert.deepEqual(moved.problems[1].cells, [0, 2]);

    const fixed = thawCell(loaded.notebook, 3);
    fixed.execution_count = 4;
    const broken = thawCell(loaded.notebook, 1);
    broken.source = 7 as unknown as string;
    const changed = await checkNotebook(loaded.notebook, { bulk: true, nonFinite: 0 });
    assert.deepEqual(changed.problems.map(brief), [
      "wrong_type 1 source 7 string or array",
      "duplicate_id id c0",
    ]);
  });

  test("outputs left as bytes are checked only in bulk, and a bulk check is not answered from a lighter one", async () => {
    const nb = {
      cells: [cell(0, { outputs: [{ output_type: "stream", name: "stdout" }] }), cell(1)],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    };
    const loaded = await load(nb);
    const light = await checkNotebook(loaded.notebook, { bulk: false, nonFinite: 0 });
    assert.deepEqual(light.problems, []);
    assert.equal(light.outputsUnchecked, true);
    const bulk = await checkNotebook(loaded.notebook, { bulk: true, nonFinite: 0 });
    assert.deepEqual(bulk.problems.map(brief), ["missing_key 0 0  text"]);
  });
});
