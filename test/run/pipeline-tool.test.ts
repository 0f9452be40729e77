/**
 * Pipelined cells through the notebook tool (docs/runs.md, "Pipelined cells"): the cell after a quick
 * one is sent at that one's reply, so when it ends the kernel the session takes over a request whose
 * kernel is gone — the death is that cell's, the kernel is restarted once, nothing after it runs, and
 * the text is the one a run one request at a time gives.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { Toolbox } from "../../src/tools/index.js";
import { oneShotToolbox, outputTexts, perTestDirs, readNb, resultText, writeNb } from "./helpers.js";

const boxes: Toolbox[] = [];
after(async () => {
  await Promise.all(boxes.map((b) => b.dispose()));
});

describe("pipelined cells in the notebook tool", () => {
  const dir = perTestDirs();

  test("a cell that ends the kernel right after a quick cell: its own death, one restart, the cells after it not run", async () => {
    const cwd = await dir();
    const { box, tool } = oneShotToolbox(cwd);
    boxes.push(box);
    const nb = tool("notebook");
    const path = await writeNb(join(cwd, "die.ipynb"), [
      ["code", "x = 1"],
      ["code", "import os; os._exit(1)"],
      ["code", "print(3)"],
    ]);
    const r = await nb({ action: "run", notebook_path: "die.ipynb", all: true });
    const text = resultText(r);
    assert.match(
      text,
      /^Ran 2 of 3 code cells selected in die\.ipynb \(0-based cell indices\)\. Outputs of the cells that ran are saved in the notebook\.\n\[cell 0 \(id c0\)\]\n\(ok\)\n\[cell 1 \(id c1\)\]\nThe kernel died while cell 1 ran \(kernel process ended: exit code 1\)\. It was restarted: all state is gone \(variables, imports\), and cell 1 was not run again; its effects up to the crash may have happened\.\nCell 2 did not run\.\n/,
    );
    // The restarted kernel takes the next run.
    const again = await nb({ action: "run", notebook_path: "die.ipynb", cell_index: 2 });
    assert.equal(again.isError, undefined, resultText(again));
    assert.deepEqual(outputTexts(await readNb(path))[2], ["3\n"]);
  });
});
