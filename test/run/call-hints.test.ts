/**
 * Errors that point the model at what it meant, through `nbagent batch` as an agent calls it: a
 * missing notebook names where the path led and what relative paths resolve against; a bad
 * parameter of any tool names the field at fault, and a name that is not a parameter the one it
 * most likely meant (python, runs, kernels and artifact alike); a replace whose old is part of a line names the closest span of a line.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { batch, resultText, tempDir, writeNb } from "./helpers.js";

test("nbagent batch: path errors say where the path led; parameter errors name the field and the near miss", async () => {
  const cwd = await tempDir();
  const path = await writeNb(join(cwd, "p.ipynb"), [
    ["code", "import pandas as pd\nmonthly = df.set_index('date').resample('ME').sum()\nprint(monthly)"],
  ]);
  const before = await readFile(path);
  const { results } = await batch(cwd, [
    { tool: "notebook", params: { action: "read", notebook_path: "nope.ipynb" } },
    {
      tool: "notebook",
      params: { action: "insert", notebook_path: "sub/a.ipynb", cell_index: 0, content: "x" },
    },
    { tool: "python", params: { cells: [{ code: "1" }], timeout: "30" } },
    { tool: "python", params: { code: "print(1)" } },
    { tool: "runs", params: { id: "r1" } },
    { tool: "kernels", params: { action: "lst" } },
    { tool: "python", params: { cells: [{ code: "1" }], notebook_path: "nope.ipynb" } },
    { tool: "artifact", params: { id: "x", line: 2 } },
    {
      tool: "notebook",
      params: { action: "replace", notebook_path: "p.ipynb", cell_index: 0, old: 'resample("ME")', new: "x" },
    },
  ]);
  const texts = results.map(resultText);
  const against = `relative paths resolve against ${cwd}, this session's working directory`;
  assert.deepEqual(texts, [
    `Error: Notebook not found: nope.ipynb. Full path: ${cwd}/nope.ipynb (${against}).`,
    `Error: Cannot create notebook sub/a.ipynb: its folder sub does not exist. Nothing was created; create the folder first (for example with the python tool). Full path: ${cwd}/sub/a.ipynb (${against}).`,
    'Error: timeout must be a number greater than 0; got "30".',
    'Error: Unknown parameter "code" (did you mean cells?). The python tool takes: cells, timeout, wait, reset, cwd, mode, session, export_notebook, notebook_path. Pass {"cells":[{"code":"..."}]}.',
    'Error: Unknown parameter "id" (did you mean run_id?). The runs tool takes: run_id, action, wait. Pass {"run_id":"r1"}.',
    'Error: action must be one of "list", "restart", "interrupt"; got "lst" (did you mean "list"?).',
    `Error: Notebook not found: nope.ipynb. Full path: ${cwd}/nope.ipynb (${against}).`,
    'Error: Unknown parameter "line" (did you mean offset?). The artifact tool takes: id, offset, column, limit, pattern. Pass {"id":"<id>","offset":<line>}.',
    `Error: No match for old in cell 0 of p.ipynb; nothing was changed. The closest text is on line 2, column 32: "resample('ME')" (the line: "monthly = df.set_index('date').resample('ME').sum()").`,
  ]);
  assert.deepEqual(await readFile(path), before, "a refused replace leaves the file byte-identical");
});
