// Parallel calls on one notebook in one process (docs/notebook-tool.md, "Parallel calls"): an agent
// issuing parallel tool calls gets every call done, in the order it made them, each on the file as
// the call before left it — through separate tool objects too (an MCP server's sessions), since the
// turns are per file and process. A call that fails still hands the turn on.
import assert from "node:assert/strict";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { call, readJson, tempDir, text, writeNotebook } from "./helpers.js";

const sources = async (path: string) =>
  (await readJson(path)).cells.map((c: { source: string[] | string }) =>
    Array.isArray(c.source) ? c.source.join("") : c.source,
  );

test("6 parallel inserts at the end all land, in call order", async () => {
  const dir = await tempDir();
  const path = await writeNotebook(join(dir, "p.ipynb"), [{ source: "start" }]);
  const results = await Promise.all(
    [1, 2, 3, 4, 5, 6].map((i) =>
      call(dir, { action: "insert", notebook_path: "p.ipynb", cell_index: i, content: `cell ${i}` }),
    ),
  );
  for (const r of results) assert.equal(r.isError, undefined, text(r));
  assert.deepEqual(await sources(path), [
    "start",
    "cell 1",
    "cell 2",
    "cell 3",
    "cell 4",
    "cell 5",
    "cell 6",
  ]);
});

test("3 parallel edits of different cells all land; a bad call among them fails alone", async () => {
  const dir = await tempDir();
  const path = await writeNotebook(join(dir, "e.ipynb"), [{ source: "a" }, { source: "b" }, { source: "c" }]);
  // The same file through a link counts as the same notebook.
  await symlink(path, join(dir, "link.ipynb"));
  const results = await Promise.all([
    call(dir, { action: "edit", notebook_path: "e.ipynb", cell_index: 0, content: "A" }),
    call(dir, { action: "edit", notebook_path: "e.ipynb", cell_index: 9, content: "nowhere" }),
    call(dir, { action: "edit", notebook_path: "link.ipynb", cell_index: 1, content: "B" }),
    call(dir, { action: "edit", notebook_path: "e.ipynb", cell_index: 2, content: "C" }),
  ]);
  assert.equal(results[1].isError, true);
  assert.match(text(results[1]), /^Error: /);
  for (const i of [0, 2, 3]) assert.equal(results[i].isError, undefined, text(results[i]));
  assert.deepEqual(await sources(path), ["A", "B", "C"]);
});
