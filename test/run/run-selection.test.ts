/**
 * The notebook tool's run selections (cell_index, cell_index..to_index, cell_range, all, nothing = all)
 * and their bad forms, in-process through the toolbox against a real kernel.
 */
import assert from "node:assert/strict";
import { copyFile, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { ROOT, tempDir } from "./helpers.js";

describe("notebook run selections", () => {
  let dir: string;
  let box: Toolbox;
  const nb = "demo.ipynb";
  const run = (params: object) =>
    box.tools
      .find((t) => t.name === "notebook")!
      .execute("t", { action: "run", notebook_path: nb, ...params });
  const counts = async () =>
    (JSON.parse(await readFile(join(dir, nb), "utf8")).cells as { execution_count?: number | null }[]).map(
      (c) => c.execution_count ?? null,
    );

  before(async () => {
    dir = await tempDir();
    await copyFile(join(ROOT, "examples/demo.ipynb"), join(dir, nb));
    box = createToolbox({ settings: testSettings(), cwd: dir });
  });
  after(async () => {
    await box?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("cell_range runs exactly [first, last]", async () => {
    const r = await run({ cell_range: [1, 1] });
    assert.equal(r.isError, undefined, JSON.stringify(r.content));
    assert.deepEqual(await counts(), [null, 1, null, null]);
  });

  it("cell_index..to_index, then all, then no selection (all)", async () => {
    await run({ cell_index: 1, to_index: 2 });
    assert.deepEqual(await counts(), [null, 2, 3, null]);
    await run({ all: true });
    assert.deepEqual(await counts(), [null, 4, 5, 6]);
    await run({});
    assert.deepEqual(await counts(), [null, 7, 8, 9]);
  });

  it("bad selections are errors and leave the file as it was", async () => {
    const before = await readFile(join(dir, nb));
    for (const params of [
      { cell_range: [2, 1] },
      { cell_range: [0, 9] },
      { cell_range: [0] },
      { cell_range: [0.5, 1] },
      { cell_range: [0, 1], cell_index: 0 },
      { all: true, cell_id: "c1b43a9b" },
      { all: "yes" },
    ]) {
      const r = await run(params);
      assert.equal(r.isError, true, JSON.stringify(params));
      assert.match((r.content[0] as { text: string }).text, /^Error: /);
    }
    const edit = await box.tools
      .find((t) => t.name === "notebook")!
      .execute("t", { action: "edit", notebook_path: nb, cell_index: 1, content: "x", cell_range: [0, 1] });
    assert.equal(edit.isError, true);
    assert.deepEqual(await readFile(join(dir, nb)), before);
  });
});
