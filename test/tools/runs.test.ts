/**
 * Runs that outlive a tool call (docs/runs.md), on real kernels: a call still going after its wait
 * budget returns its output so far with a run id and goes on; the runs tool waits for more, returns
 * the call's own result once done, or interrupts it (state kept); a notebook run keeps saving.
 * Cells block on gate files the test creates, so nothing depends on how fast the machine is.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { batch, type Json, resultText, writeNb } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-runs-"));
const boxes: Toolbox[] = [];
after(async () => {
  await Promise.all(boxes.map((b) => b.dispose()));
  rmSync(root, { recursive: true, force: true });
});

function toolbox() {
  const cwd = mkdtempSync(join(root, "w-"));
  const box = createToolbox({
    settings: testSettings(),
    cwd,
    runtime: { stateRoot: join(root, "state") },
    waitSeconds: 1,
  });
  boxes.push(box);
  const tool = (name: string) => (params: Json) =>
    box.tools.find((t) => t.name === name)!.execute("t", params) as Promise<Json>;
  return { cwd, py: tool("python"), nb: tool("notebook"), runs: tool("runs") };
}

/** Python that blocks until `path` exists. */
const gate = (path: string) =>
  `import os, time\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)`;

async function until(cond: () => boolean) {
  while (!cond()) await new Promise((r) => setTimeout(r, 20)); // a condition, polled
}

describe("runs that outlive a call", { concurrency: true }, () => {
  test("a python call past its wait budget returns a run id; waiting gives new output, then the result", async () => {
    const { cwd, py, runs } = toolbox();
    await py({ cells: [{ code: "1" }], wait: 600 }); // the kernel is up: the budget falls on cell 2
    const g1 = join(cwd, "g1");
    const g2 = join(cwd, "g2");
    const first = await py({
      cells: [
        { code: "x = 41" },
        { code: `print('started', flush=True)\n${gate(g1)}\nprint('half', flush=True)\n${gate(g2)}` },
        { code: "print(x + 1)" },
      ],
      timeout: 600,
    });
    const t1 = resultText(first);
    assert.equal(first.isError, undefined);
    assert.match(
      t1,
      /^Still running after 1 s: run (r\d+), python call; cell 2 is running\. It goes on in the background\.\n/,
    );
    const id = /run (r\d+)/.exec(t1)![1];
    assert.match(
      t1,
      new RegExp(`To wait for more or for the result, call the runs tool: \\{"run_id":"${id}"\\}`),
    );
    assert.equal(first.details.run.status, "running");
    writeFileSync(g1, "");
    // Still blocked on g2: the wait returns the new output (from the running cell on).
    let second: Json;
    do second = await runs({ run_id: id, wait: 1 });
    while (!/half/.test(resultText(second)));
    assert.match(
      resultText(second),
      /^Still running \(\d+ s so far\): run r\d+, python call; cell 2 is running\./,
    );
    const t2 = resultText(second);
    assert.match(t2, /\nNew output since the last look( \(from cell 2 on\))?:\n/);
    assert.doesNotMatch(t2, /\[1\/3\]/, "cell 1 was shown before");
    if (/\nstarted\n/.test(t1)) {
      // Only what came since: the line shown before is not repeated.
      assert.doesNotMatch(t2, /\nstarted\n/);
      assert.match(t2, /\n… \[line 1 shown before\]\nhalf\n/);
    }
    writeFileSync(g2, "");
    const done = await runs({ run_id: id, wait: 600 });
    const t3 = resultText(done);
    assert.match(
      t3,
      new RegExp(
        `^Run ${id} \\(python call\\) finished after \\d+ s\\. Its result:\\n\\[1/3\\]\\n\\(ok\\)\\n\\[2/3\\]\\nstarted\\nhalf\\n\\[3/3\\]\\n42$`,
      ),
    );
    assert.equal(done.details.run.status, "finished");
    // Kept: asking again gives the same result.
    assert.match(resultText(await runs({ run_id: id })), /\[3\/3\]\n42$/);
  });

  test("interrupt stops the running cell; the kernel keeps its state", async () => {
    const { cwd, py, runs } = toolbox();
    await py({ cells: [{ code: "kept = 'yes'" }], wait: 600 });
    const r = await py({
      cells: [{ code: gate(join(cwd, "never")) }, { code: "print('not me')" }],
      timeout: 600,
    });
    const id = /run (r\d+)/.exec(resultText(r))![1];
    const stopped = await runs({ run_id: id, action: "interrupt" });
    const text = resultText(stopped);
    assert.equal(stopped.isError, true);
    assert.match(text, /KeyboardInterrupt/);
    assert.match(
      text,
      /\nCell 1 was interrupted: the call was cancelled \(interrupted through the runs tool\); the kernel keeps its state\.\nCell 2 did not run\.$/,
    );
    assert.equal(resultText(await py({ cells: [{ code: "print(kept)" }] })), "yes");
  });

  test("a notebook run goes on in the background and saves each cell as it finishes", async () => {
    const { cwd, nb, runs } = toolbox();
    const g = join(cwd, "go");
    const path = await writeNb(join(cwd, "long.ipynb"), [
      ["code", "print('first')"],
      ["code", `${gate(g)}\nprint('second')`],
    ]);
    await nb({ action: "run", notebook_path: "long.ipynb", cell_index: 0, wait: 600 }); // kernel up
    const r = await nb({ action: "run", notebook_path: "long.ipynb", timeout: 600 });
    const text = resultText(r);
    assert.match(
      text,
      /^Still running after 1 s: run (r\d+), run of long\.ipynb; cell [01] is running\. It goes on in the background, saving each cell's outputs into the notebook as it finishes\./,
    );
    // Cell 0's output is in the file while cell 1 still runs.
    // Cell 0's new output (its second execution in this kernel) is in the file while cell 1 runs.
    const saved = () => JSON.parse(readFileSync(path, "utf8"));
    await until(() => saved().cells[0].execution_count === 2);
    assert.deepEqual(saved().cells[1].outputs, []);
    assert.ok(!existsSync(g));
    writeFileSync(g, "");
    const id = /run (r\d+)/.exec(text)![1];
    const done = await runs({ run_id: id, wait: 600 });
    assert.equal(done.isError, undefined, resultText(done));
    assert.match(resultText(done), /Ran 2 of 2 code cells selected in long\.ipynb/);
    assert.match(readFileSync(path, "utf8"), /"second\\n"/);
  });

  test("bad run ids and parameters are errors that name what to do", async () => {
    const { runs } = toolbox();
    const r = await runs({ run_id: "r999" });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /^Error: No run "r999" here \(none is running\)\./);
    const bad = await runs({ id: "r1" });
    assert.equal(bad.isError, true);
    assert.match(resultText(bad), /^Error: invalid parameter/);
  });

  test("through nbagent batch: the run goes on between lines and is waited for", async () => {
    const cwd = mkdtempSync(join(root, "b-"));
    const g = join(cwd, "gate");
    const { results, stderr } = await batch(cwd, [
      {
        tool: "python",
        params: { cells: [{ code: `${gate(g)}\nprint('through')` }], timeout: 600, wait: 1 },
      },
      {
        tool: "python",
        params: { session: "other", cells: [{ code: `open(${JSON.stringify(g)}, 'w').close()` }] },
      },
      { tool: "runs", params: { run_id: "r1", wait: 600 } },
    ]);
    assert.equal(results.length, 3, stderr);
    assert.match(resultText(results[0]), /^Still running after 1 s: run r1, python call/);
    assert.match(
      resultText(results[2]),
      /^Run r1 \(python call\) finished after \d+ s\. Its result:\nthrough$/,
    );
  });
});
