/**
 * Item 7 of issue 8: the notebook tool checks its parameters against its schema before touching
 * anything — no unknown keys, types, ranges — with a message naming the bad field and, for a near
 * miss, the right one. Run through a real toolbox (real runtime): a call that slipped through would
 * start a kernel and rewrite the saved outputs, which the byte comparison catches.
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";
import { batch, resultText } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { tempDir, text, writeNotebook } from "./helpers.js";

let dir: string;
let toolbox: Toolbox;
before(async () => {
  dir = await tempDir();
  toolbox = createToolbox({ settings: testSettings(), cwd: dir });
});
after(() => toolbox.dispose());

const notebookTool = () => toolbox.tools.find((t) => t.name === "notebook")!;

async function sample(name: string): Promise<string> {
  return writeNotebook(join(dir, name), [
    {
      source: "print('saved')",
      execution_count: 7,
      outputs: [{ output_type: "stream", name: "stdout", text: ["saved\n"] }],
    },
    { type: "markdown", source: "# Title" },
    { source: "x = 1" },
  ]);
}

const CASES: [Record<string, unknown>, string][] = [
  [{ action: "run", timeout: -5 }, "Error: timeout must be a number of seconds greater than 0, got -5"],
  [{ action: "run", timeout: 0 }, "Error: timeout must be a number of seconds greater than 0, got 0"],
  [{ action: "run", timeout: "10" }, 'Error: timeout must be a number of seconds greater than 0, got "10"'],
  [{ action: "run", timeout: null }, "Error: timeout must be a number of seconds greater than 0, got null"],
  [
    { action: "edit", cell_index: 0, content: "print('new')", execute: "yes" },
    'Error: execute must be true or false, got "yes"',
  ],
  [{ action: "run", allow_errors: "true" }, 'Error: allow_errors must be true or false, got "true"'],
  [{ action: "run", all: 1 }, "Error: all must be true or false, got 1"],
  [{ action: "read", limit: 0 }, "Error: limit must be an integer of at least 1, got 0"],
  [
    { action: "edit", cell_index: 0, source: "print(2)" },
    'Error: Unknown parameter "source" (did you mean content?). The notebook tool takes: action, notebook_path, cell_index, cell_id, content, old, new, all, cell_type, tags, add, remove, to_index, offset, limit, kernel, execute, cell_range, allow_errors, timeout, wait.',
  ],
  [
    { action: "insert", cell_index: 0, code: "x" },
    'Error: Unknown parameter "code" (did you mean content?).',
  ],
  [{ action: "delete", index: 1 }, 'Error: Unknown parameter "index" (did you mean cell_index?).'],
  [{ action: "delete", id: "cell-1" }, 'Error: Unknown parameter "id" (did you mean cell_id?).'],
  [
    { action: "insert", cell_index: 0, content: "x", type: "markdown" },
    'Error: Unknown parameter "type" (did you mean cell_type?).',
  ],
  [{ action: "read", cel_index: 1 }, 'Error: Unknown parameter "cel_index" (did you mean cell_index?).'],
  [{ action: "run", timout: 5 }, 'Error: Unknown parameter "timout" (did you mean timeout?).'],
  [{ action: "read", verbose: true }, 'Error: Unknown parameter "verbose". The notebook tool takes:'],
  [
    { action: "edit", index: 0, source: "x" },
    'Error: Unknown parameters "index" (did you mean cell_index?), "source" (did you mean content?).',
  ],
  [
    { action: "remove", cell_index: 0 },
    'Error: Unknown action "remove" (did you mean "delete"?). Use one of: edit, replace, insert, delete, read, move, clear_outputs, tags, run.',
  ],
  [{ action: "delet", cell_index: 0 }, 'Error: Unknown action "delet" (did you mean "delete"?).'],
  [{ action: "EDIT", cell_index: 0, content: "x" }, 'Error: Unknown action "EDIT" (did you mean "edit"?).'],
  [{ action: "clear_output" }, 'Error: Unknown action "clear_output" (did you mean "clear_outputs"?).'],
  [{ action: "execute", cell_index: 0 }, 'Error: Unknown action "execute" (did you mean "run"?).'],
  [
    { action: "explode" },
    'Error: Unknown action "explode". Use one of: edit, replace, insert, delete, read, move, clear_outputs, tags, run.',
  ],
  [{ action: "read", content: "x" }, "Error: content goes with edit and insert, not read."],
  [
    { action: "move", cell_index: 0, to_index: 1, cell_type: "code" },
    "Error: cell_type goes with edit and insert",
  ],
  [
    { action: "delete", cell_index: 0, execute: true },
    "Error: execute goes with edit, insert and replace, not delete.",
  ],
  [
    { action: "edit", cell_index: 0, content: "x", timeout: 5 },
    "Error: timeout goes with run (or edit/insert/replace with execute: true), not edit.",
  ],
  [{ action: "run", offset: 1 }, "Error: offset goes with read, not run."],
  [{ action: "read", cell_index: 0, limit: 2 }, "Error: read takes cell_index or cell_id (one cell"],
  [
    { action: "run", cell_range: [0] },
    "Error: cell_range must be [first, last] (two integer cell indices), got [0]",
  ],
];

describe("bad parameters are refused before anything runs or is written", () => {
  test("each case: the exact message, no kernel run, the file byte-identical", async () => {
    const path = await sample("nb.ipynb");
    const before = await readFile(path);
    const tool = notebookTool();
    for (const [params, expected] of CASES) {
      const r = await tool.execute("t", { notebook_path: "nb.ipynb", ...params });
      assert.equal(r.isError, true, `${JSON.stringify(params)} → ${text(r)}`);
      assert.ok(
        text(r).startsWith(expected),
        `${JSON.stringify(params)}\n got: ${text(r)}\nwant: ${expected}`,
      );
      assert.deepEqual(await readFile(path), before, JSON.stringify(params));
    }
    assert.deepEqual(await readdir(dir), ["nb.ipynb"]);
    assert.deepEqual(toolbox.runtime.sessions.keys(), [], "no kernel was started");
  });

  test("without an executor the action list has no run, and run's parameters are refused", async () => {
    await sample("plain.ipynb");
    const tool = createNotebookTool({ cwd: dir });
    const r = await tool.execute("t", { action: "explode", notebook_path: "plain.ipynb" } as never);
    assert.equal(
      text(r),
      'Error: Unknown action "explode". Use one of: edit, replace, insert, delete, read, move, clear_outputs, tags.',
    );
    const t = await tool.execute("t", { action: "read", notebook_path: "plain.ipynb", timeout: 5 } as never);
    assert.match(text(t), /^Error: timeout goes with running cells\. Running cells is not available/);
    const s = await tool.execute("t", { action: "read", notebook_path: "plain.ipynb", source: "x" } as never);
    assert.match(
      text(s),
      /^Error: Unknown parameter "source" \(did you mean content\?\)\. The notebook tool takes: action, notebook_path, cell_index, cell_id, content, old, new, all, cell_type, tags, add, remove, to_index, offset, limit, kernel\.$/,
    );
  });

  test("false booleans ask for nothing and are accepted with any action", async () => {
    await sample("ok.ipynb");
    const r = await notebookTool().execute("t", {
      action: "delete",
      notebook_path: "ok.ipynb",
      cell_index: 2,
      execute: false,
    });
    assert.equal(r.isError, undefined, text(r));
  });

  test("through nbagent batch: the same texts; the file is untouched", async () => {
    const path = await sample("cli.ipynb");
    const before = await readFile(path);
    const { results, code } = await batch(dir, [
      { tool: "notebook", params: { action: "run", notebook_path: "cli.ipynb", timeout: -5 } },
      { tool: "notebook", params: { action: "edit", notebook_path: "cli.ipynb", cell_index: 0, code: "1" } },
      { tool: "notebook", params: { action: "rm", notebook_path: "cli.ipynb", cell_index: 0 } },
    ]);
    assert.equal(code, 1);
    assert.equal(resultText(results[0]), "Error: timeout must be a number of seconds greater than 0, got -5");
    assert.match(resultText(results[1]), /^Error: Unknown parameter "code" \(did you mean content\?\)/);
    assert.match(resultText(results[2]), /^Error: Unknown action "rm" \(did you mean "delete"\?\)/);
    assert.deepEqual(await readFile(path), before);
  });
});
