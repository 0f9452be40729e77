/**
 * The notebook tool on the event stream (src/tools/notebook/notebook.ts, docs/view.md "Events"): every file it
 * loads is `notebook-opened`, every write of its own `notebook-saved` with the cells the write
 * changed, by the file's real path; a refused call writes nothing and says nothing was saved.
 */
import assert from "node:assert/strict";
import { readFile, realpath, symlink } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { EventBus, type RuntimeEvent } from "../../src/runtime/events.js";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";
import { tempDir, text, writeNotebook } from "../notebook/helpers.js";

test("reads say notebook-opened, writes notebook-saved with the cells they changed, by real path", async () => {
  const dir = await realpath(await tempDir());
  const file = join(dir, "nb.ipynb");
  await writeNotebook(file, [{ source: "a = 1" }, { source: "b = 2" }, { source: "c = 3" }]);
  // The model names the file through a link: the events name the file itself.
  await symlink(file, join(dir, "link.ipynb"));
  const bus = new EventBus();
  const seen: RuntimeEvent[] = [];
  bus.listen(({ seq: _s, at: _a, ...e }) => seen.push(e as RuntimeEvent));
  const tool = createNotebookTool({ cwd: dir, events: bus });
  const run = async (params: Record<string, unknown>) => {
    seen.length = 0;
    const r = await tool.execute("t", { notebook_path: "link.ipynb", ...params } as never);
    return { text: text(r), events: [...seen] };
  };

  assert.deepEqual((await run({ action: "read" })).events, [{ type: "notebook-opened", path: file }]);

  const ins = await run({ action: "insert", cell_index: 1, content: "new = 0" });
  const id = /\(id ([^)]+)\)/.exec(ins.text)?.[1];
  assert.ok(id, ins.text);
  assert.deepEqual(ins.events, [
    { type: "notebook-opened", path: file },
    { type: "notebook-saved", path: file, cellIds: [id] },
  ]);

  assert.deepEqual((await run({ action: "edit", cell_id: "cell-2", content: "c = 4" })).events[1], {
    type: "notebook-saved",
    path: file,
    cellIds: ["cell-2"],
  });
  assert.deepEqual((await run({ action: "delete", cell_id: "cell-0" })).events[1], {
    type: "notebook-saved",
    path: file,
    cellIds: ["cell-0"],
  });
  // [new, b, c] → [b, c, new]: the moved cell is named (and the cells whose order it changed).
  const moved = (await run({ action: "move", cell_id: id, to_index: 2 })).events[1];
  assert.ok(moved?.type === "notebook-saved" && moved.cellIds.includes(id), JSON.stringify(moved));

  // A refused call writes nothing: no notebook-saved, the file as it was.
  const before = await readFile(file, "utf8");
  const refused = await run({ action: "edit", cell_index: 9, content: "x" });
  assert.match(refused.text, /^Error: Cell index 9 out of range/);
  assert.deepEqual(
    refused.events.map((e) => e.type),
    ["notebook-opened"],
  );
  assert.equal(await readFile(file, "utf8"), before);

  // An insert that creates the file says it was saved, with its one cell.
  const made = await run({ action: "insert", notebook_path: "fresh.ipynb", cell_index: 0, content: "x = 1" });
  const freshId = /\(id ([^)]+)\)/.exec(made.text)?.[1];
  assert.deepEqual(made.events, [
    { type: "notebook-saved", path: join(dir, "fresh.ipynb"), cellIds: [freshId] },
  ]);
});
