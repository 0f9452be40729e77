/**
 * A notebook run merges with other writers (docs/notebook-tool.md, "A run merges with other edits"):
 * while a cell runs, the agent's own calls and other programs (a person's editor saving with
 * nbformat.write, as JupyterLab does) change the file; the run finds each cell by id when its turn
 * comes, runs its current source, and writes outputs into the file as it is then — both sides' changes
 * kept, the merged file valid for nbformat, and the text saying what happened to which cell.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { Toolbox } from "../../src/tools/index.js";
import { stdioServer } from "../mcp/helpers.js";
import {
  batch,
  type Json,
  oneShotToolbox,
  outputTexts,
  perTestDirs,
  python,
  readNb,
  resultText,
  validate,
  waitFor,
  writeNb,
} from "./helpers.js";

const boxes: Toolbox[] = [];
after(async () => {
  await Promise.all(boxes.map((b) => b.dispose()));
});

function toolbox(cwd: string) {
  const { box, tool } = oneShotToolbox(cwd);
  boxes.push(box);
  return { nb: tool("notebook") };
}

/** A cell that says it started (file `started`), then blocks until file `go` exists, then prints. */
function gated(dir: string, text: string): string {
  const started = JSON.stringify(join(dir, "started"));
  const go = JSON.stringify(join(dir, "go"));
  return `import os, time\nopen(${started}, "w").close()\nwhile not os.path.exists(${go}): time.sleep(0.02)\nprint(${JSON.stringify(text)})`;
}

/** Another program changes the notebook the way Jupyter saves it: nbformat.read, change, nbformat.write. */
async function jupyterSaves(path: string, change: string): Promise<void> {
  const code =
    "import sys, nbformat\nfrom nbformat.v4 import new_markdown_cell, new_code_cell\n" +
    "p = sys.argv[1]\nnb = nbformat.read(p, as_version=4)\n" +
    `${change}\nnbformat.write(nb, p)\n`;
  await python(["-c", code, path]);
}

const sources = (nb: Json) => nb.cells.map((c: Json) => `${c.id}:${[c.source].flat().join("")}`);

/** A toolbox in `cwd` and a notebook there whose cells print one, two (gated) and three. */
async function oneTwoThree(cwd: string, name: string) {
  const { nb } = toolbox(cwd);
  const path = await writeNb(join(cwd, name), [
    ["code", "print('one')"],
    ["code", gated(cwd, "two")],
    ["code", "print('three')"],
  ]);
  return { cwd, nb, path };
}

/** Starts a run of every cell, waits until the gated cell is running, and returns the pending result. */
async function runUntilGate(dir: string, nb: (p: Json) => Promise<Json>, name: string) {
  const running = nb({ action: "run", notebook_path: name, timeout: 600 });
  await waitFor("the gated cell to start", () => existsSync(join(dir, "started")), 120_000);
  return { running }; // wrapped: an async function returning a promise would wait for it
}

describe("a notebook run merges with other writers", { concurrency: true }, () => {
  const dir = perTestDirs();

  test("the agent's own insert and edit while a cell runs: both kept, the edited cell runs its new source", async () => {
    const { cwd, nb, path } = await oneTwoThree(await dir(), "a.ipynb");
    const { running } = await runUntilGate(cwd, nb, "a.ipynb");
    const ins = await nb({
      action: "insert",
      notebook_path: "a.ipynb",
      cell_index: 0,
      cell_type: "markdown",
      content: "# intro",
    });
    assert.equal(ins.isError, undefined, resultText(ins));
    const ed = await nb({
      action: "edit",
      notebook_path: "a.ipynb",
      cell_id: "c2",
      content: "print('THREE')",
    });
    assert.equal(ed.isError, undefined, resultText(ed));
    writeFileSync(join(cwd, "go"), "");
    const r = await running;
    const text = resultText(r);
    assert.equal(r.isError, undefined, text);
    assert.match(
      text,
      /^Ran 3 of 3 code cells selected in a\.ipynb \(0-based cell indices\)\. Outputs of the cells that ran are saved in the notebook\.\nThe file changed on disk during the run \(another call or program saved it\): the run's outputs were merged into it by cell id, and the other changes are kept\. Read it again before editing by index\.\nCell 2 \(id c2\), now at index 3, was edited after the run started: its new source ran\.\n/,
    );
    assert.doesNotMatch(text, /Nothing was written/);
    const saved = await readNb(path);
    assert.equal([saved.cells[0].source].flat().join(""), "# intro");
    assert.deepEqual(sources(saved).slice(1), [
      "c0:print('one')",
      `c1:${gated(cwd, "two")}`,
      "c2:print('THREE')",
    ]);
    assert.deepEqual(outputTexts(saved).slice(1), [["one\n"], ["two\n"], ["THREE\n"]]);
    assert.equal(await validate(path), "ok");
  });

  test("Jupyter re-saves the file mid-run (nbformat.write, nothing changed): every output is still saved", async () => {
    const { cwd, nb, path } = await oneTwoThree(await dir(), "b.ipynb");
    const { running } = await runUntilGate(cwd, nb, "b.ipynb");
    await jupyterSaves(path, "nb.metadata['saved_by'] = 'jupyter'");
    writeFileSync(join(cwd, "go"), "");
    const r = await running;
    assert.equal(r.isError, undefined, resultText(r));
    assert.match(resultText(r), /the run's outputs were merged into it by cell id/);
    const saved = await readNb(path);
    assert.equal(saved.metadata.saved_by, "jupyter");
    assert.deepEqual(outputTexts(saved), [["one\n"], ["two\n"], ["three\n"]]);
    assert.equal(await validate(path), "ok");
  });

  test("a person changes a later cell and adds one mid-run: their changes are kept, the new source runs", async () => {
    const { cwd, nb, path } = await oneTwoThree(await dir(), "c.ipynb");
    const { running } = await runUntilGate(cwd, nb, "c.ipynb");
    await jupyterSaves(
      path,
      "nb.cells[2].source = \"print('changed by a person')\"\nc = new_markdown_cell('added by a person')\nc['id'] = 'm9'\nnb.cells.append(c)",
    );
    writeFileSync(join(cwd, "go"), "");
    const r = await running;
    assert.equal(r.isError, undefined, resultText(r));
    assert.match(
      resultText(r),
      /\nCell 2 \(id c2\) was edited after the run started: its new source ran\.\n/,
    );
    const saved = await readNb(path);
    assert.deepEqual(sources(saved), [
      "c0:print('one')",
      `c1:${gated(cwd, "two")}`,
      "c2:print('changed by a person')",
      "m9:added by a person",
    ]);
    assert.deepEqual(outputTexts(saved), [["one\n"], ["two\n"], ["changed by a person\n"], []]);
    assert.equal(await validate(path), "ok");
  });

  test("the running cell deleted or edited meanwhile, a later one deleted: said per cell, nothing silent", async () => {
    const cwd = await dir();
    const { nb } = toolbox(cwd);
    const path = await writeNb(join(cwd, "d.ipynb"), [
      ["code", gated(cwd, "two")],
      ["code", "print('three')"],
      ["code", "print('four')"],
    ]);
    const { running } = await runUntilGate(cwd, nb, "d.ipynb");
    // The running cell c0 is deleted, c1 is deleted before its turn.
    await jupyterSaves(path, "del nb.cells[0:2]");
    writeFileSync(join(cwd, "go"), "");
    const r = await running;
    const text = resultText(r);
    assert.equal(r.isError, undefined, text);
    assert.match(
      text,
      /^Ran 2 of 3 code cells selected in d\.ipynb \(0-based cell indices\)\. Outputs of the other cells that ran are saved in the notebook\.\n/m,
    );
    assert.match(
      text,
      /\nCell 0 \(id c0\) was deleted from the notebook while it ran: its outputs are not in the file; they are in this result \(above\)\.\n/,
    );
    assert.match(text, /\nCell 1 \(id c1\) did not run: deleted from the notebook before its turn\.\n/);
    assert.match(text, /two/, "the deleted cell's output is shown");
    const saved = await readNb(path);
    assert.deepEqual(sources(saved), ["c2:print('four')"]);
    assert.deepEqual(outputTexts(saved), [["four\n"]]);
    assert.equal(await validate(path), "ok");

    // A cell edited while it runs keeps the outputs of the code that ran, and the text says so.
    const cwd2 = await dir();
    const { nb: nb2 } = toolbox(cwd2);
    const path2 = await writeNb(join(cwd2, "e.ipynb"), [["code", gated(cwd2, "old code")]]);
    const { running: running2 } = await runUntilGate(cwd2, nb2, "e.ipynb");
    await jupyterSaves(path2, "nb.cells[0].source = \"print('new code')\"");
    writeFileSync(join(cwd2, "go"), "");
    const r2 = await running2;
    assert.match(
      resultText(r2),
      /\nCell 0 \(id c0\) was edited while it ran: the outputs saved with it are those of the code that ran \(above\)\.\n/,
    );
    const saved2 = await readNb(path2);
    assert.deepEqual(sources(saved2), ["c0:print('new code')"]);
    assert.deepEqual(outputTexts(saved2), [["old code\n"]]);
  });

  test("the notebook replaced by a link to another file mid-run: nothing written there, an error that says what is unsaved", async () => {
    const cwd = await dir();
    const { nb } = toolbox(cwd);
    const victim = await writeNb(join(cwd, "victim.ipynb"), [["code", "print('victim')"]]);
    const before = readFileSync(victim);
    const path = join(cwd, "h.ipynb");
    await writeNb(path, [
      [
        "code",
        `import os
os.rename(${JSON.stringify(path)}, ${JSON.stringify(`${path}.old`)})
os.symlink(${JSON.stringify(victim)}, ${JSON.stringify(path)})
print('swapped')`,
      ],
      ["code", "print('after')"],
    ]);
    const r = await nb({ action: "run", notebook_path: "h.ipynb" });
    const text = resultText(r);
    assert.equal(r.isError, true, text);
    assert.match(
      text,
      /^Ran 1 of 2 code cells selected in h\.ipynb \(0-based cell indices\)\. The outputs of the cells that ran since the last save are NOT in the file: .*h\.ipynb was replaced by a link to .*victim\.ipynb during the run; nothing was written there\. They are shown below\.\nCell 1 did not run: the run stopped because the notebook could not be saved\.\n\[cell 0 \(id c0\)\]\nswapped$/,
    );
    assert.ok(readFileSync(victim).equals(before), "the linked file is untouched");
  });

  test("nbagent batch: a backgrounded run, then the agent's insert: the run ends and saves every cell", async () => {
    const cwd = await dir();
    const path = await writeNb(join(cwd, "f.ipynb"), [
      ["code", "print('one')"],
      ["code", gated(cwd, "two")],
      ["code", "print('three')"],
    ]);
    const { results } = await batch(cwd, [
      { tool: "notebook", params: { action: "run", notebook_path: "f.ipynb", wait: 1 } },
      {
        tool: "notebook",
        params: { action: "insert", notebook_path: "f.ipynb", cell_index: 0, content: "x = 1" },
      },
      {
        tool: "python",
        params: { cells: [{ code: `open(${JSON.stringify(join(cwd, "go"))}, "w").close()` }] },
      },
      { tool: "runs", params: { run_id: "r1", wait: 600 } },
    ]);
    assert.match(resultText(results[0]), /^Still running after 1 s: run r1, run of f\.ipynb/);
    assert.notEqual(results[1].isError, true, resultText(results[1]));
    const done = resultText(results[3]);
    assert.match(done, /Ran 3 of 3 code cells selected in f\.ipynb/);
    assert.match(done, /the run's outputs were merged into it by cell id/);
    assert.doesNotMatch(done, /Nothing was written/);
    const saved = await readNb(path);
    assert.equal([saved.cells[0].source].flat().join(""), "x = 1");
    assert.deepEqual(outputTexts(saved).slice(1), [["one\n"], ["two\n"], ["three\n"]]);
    assert.equal(await validate(path), "ok");
  });

  test("MCP: parallel calls on one notebook issued at once all succeed, each result true", async () => {
    const cwd = await dir();
    const path = await writeNb(join(cwd, "g.ipynb"), [
      ["code", "print('one')"],
      ["code", "print('two')"],
    ]);
    const server = await stdioServer(["--cwd", cwd]);
    try {
      const call = (args: Json) =>
        server.client.callTool({ name: "notebook", arguments: args }) as Promise<Json>;
      const results = await Promise.all([
        call({ action: "run", notebook_path: "g.ipynb" }),
        call({ action: "insert", notebook_path: "g.ipynb", cell_index: 2, content: "print('i1')" }),
        call({ action: "insert", notebook_path: "g.ipynb", cell_index: 3, content: "print('i2')" }),
        call({ action: "edit", notebook_path: "g.ipynb", cell_id: "c1", content: "print('TWO')" }),
        call({
          action: "insert",
          notebook_path: "g.ipynb",
          cell_index: 0,
          cell_type: "markdown",
          content: "top",
        }),
        call({ action: "tags", notebook_path: "g.ipynb", cell_id: "c0", add: ["keep"] }),
      ]);
      for (const r of results) assert.equal(r.isError, undefined, resultText(r));
      assert.doesNotMatch(results.map(resultText).join("\n"), /Nothing was written|Error:/);
      const saved = await readNb(path);
      const texts = sources(saved).map((s: string) => s.replace(/^[^:]*:/, ""));
      for (const s of ["top", "print('one')", "print('TWO')", "print('i1')", "print('i2')"])
        assert.ok(texts.includes(s), `${s} in ${texts}`);
      assert.deepEqual(saved.cells.find((c: Json) => c.id === "c0").metadata.tags, ["keep"]);
      // The run saved its outputs into cells c0 and c1 whatever happened around it.
      assert.deepEqual(
        saved.cells.find((c: Json) => c.id === "c0").outputs.map((o: Json) => [o.text].flat().join("")),
        ["one\n"],
      );
      assert.equal(await validate(path), "ok");
    } finally {
      await server.client.close();
    }
  });
});
