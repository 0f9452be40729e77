/**
 * Every road that loses a kept kernel's state, through `nbagent batch` on real kernels
 * (docs/kernel-state.md, "What the model is told when state is lost"): the call that caused it says
 * so in its own result, and the next result in that session says it at its top, once — an
 * interrupt through the kernels tool or the runs tool of a cell that ignores SIGINT, a timeout such
 * a cell ignores, a restart through the kernels tool, a cell that kills its kernel, the eviction of
 * an idle kernel for a fifth one. (A cancelled call: test/tools/kernel-holder.test.ts.) A notebook's
 * "cells above did not run" hint then leaves out the cell that caused the restart.
 *
 * No sleeps: a cell that ignores SIGINT writes a file before it blocks, and the batch line after it
 * (another session) waits for that file, so the interrupt reaches a cell that already ignores it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { batch, type Json, resultText, tempDir, writeNb } from "./helpers.js";

/** A cell that ignores SIGINT, then says so in the file `ready` and blocks. */
const deaf = (ready: string) =>
  `import signal, time, pathlib\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\npathlib.Path(${JSON.stringify(ready)}).write_text('deaf')\ntime.sleep(600)`;

/** A batch line that returns once `path` exists (in a session of its own). */
const waitForFile = (path: string) => ({
  tool: "python",
  params: {
    session: "watch",
    cells: [{ code: `import os, time\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)` }],
  },
});

const CLOCK = "\\d\\d:\\d\\d:\\d\\d";
const GONE =
  "This call runs in the new kernel: variables, imports and other state from earlier calls are gone\\.";

function texts(results: Json[]): string[] {
  return results.map((r) => resultText(r));
}

describe("a lost kernel state is told by the call that lost it and at the top of the next one", {
  concurrency: true,
}, () => {
  test("the kernels tool's interrupt of a cell that ignores it waits for the restart and says the state is lost", async () => {
    const dir = await tempDir();
    const ready = join(dir, "ready");
    const { results, stderr } = await batch(dir, [
      { tool: "python", params: { cells: [{ code: "keep = 1" }] } },
      { tool: "python", params: { wait: 1, timeout: 300, cells: [{ code: deaf(ready) }] } },
      waitForFile(ready),
      { tool: "kernels", params: { action: "interrupt", session_id: "default" } },
      { tool: "python", params: { cells: [{ code: "print(keep)" }] } },
      { tool: "python", params: { cells: [{ code: "print('again')" }] } },
    ]);
    const t = texts(results);
    assert.match(t[1], /^Still running after 1 s: run r2, python call; cell 1 is running\./, stderr);
    assert.match(
      t[3],
      /^Interrupted run r2 \(python call\), which had held python session "default" for \d+ s \(cell 1 running\)\. Cell 1 did not stop when interrupted, so the kernel was restarted: python session "default" lost its state \(variables, imports and other state from earlier calls are gone; the next call there says so too\)\. The run has ended\. Its result: call the runs tool with \{"run_id":"r2"\}\.$/,
    );
    assert.doesNotMatch(t[3], /keeps its state/);
    assert.match(
      t[4],
      new RegExp(
        `^Note: This session's kernel was restarted at ${CLOCK}: run r2 \\(python call\\) was interrupted through the kernels tool while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\\. ${GONE}\\n`,
      ),
    );
    assert.match(t[4], /NameError: name 'keep' is not defined/);
    assert.equal(t[5], "again", "said once");
    // the run's own result, printed when the input ended (nobody asked for it)
    assert.match(
      t[6],
      /Cell 1 was interrupted: .*it did not stop, so the kernel was restarted and its state is lost\./,
    );
  });

  test("the runs tool's interrupt of a cell that ignores it: its result and the next call's say the state is lost", async () => {
    const dir = await tempDir();
    const ready = join(dir, "ready");
    const { results, stderr } = await batch(dir, [
      { tool: "python", params: { cells: [{ code: "keep = 1" }] } },
      { tool: "python", params: { wait: 1, timeout: 300, cells: [{ code: deaf(ready) }] } },
      waitForFile(ready),
      { tool: "runs", params: { run_id: "r2", action: "interrupt" } },
      { tool: "python", params: { cells: [{ code: "print(keep)" }] } },
    ]);
    const t = texts(results);
    assert.match(t[1], /run r2/, stderr);
    assert.match(
      t[3],
      /^Run r2 \(python call\) finished after \d+ s\. Its result:\n[\s\S]*Cell 1 was interrupted: the call was cancelled \(interrupted through the runs tool\); it did not stop, so the kernel was restarted and its state is lost\.$/,
    );
    assert.match(
      t[4],
      new RegExp(
        `^Note: This session's kernel was restarted at ${CLOCK}: run r2 \\(python call\\) was interrupted through the runs tool while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\\. ${GONE}\\n`,
      ),
    );
    assert.match(t[4], /NameError: name 'keep' is not defined/);
  });

  test("a timeout the cell ignores; a restart through the kernels tool; a cell that kills its kernel", async () => {
    const dir = await tempDir();
    const { results, stderr } = await batch(dir, [
      { tool: "python", params: { cells: [{ code: "keep = 1" }] } },
      { tool: "python", params: { timeout: 3, cells: [{ code: deaf(join(dir, "ready")) }] } },
      { tool: "python", params: { cells: [{ code: "keep = 2" }] } },
      { tool: "kernels", params: { action: "restart", session_id: "default" } },
      { tool: "python", params: { cells: [{ code: "print('keep' in dir())" }] } },
      { tool: "python", params: { cells: [{ code: "keep = 3" }] } },
      { tool: "python", params: { cells: [{ code: "import os\nos._exit(1)" }] } },
      { tool: "python", params: { cells: [{ code: "print('keep' in dir())" }] } },
      { tool: "python", params: { cells: [{ code: "print('again')" }] } },
    ]);
    const t = texts(results);
    assert.equal(t.length, 9, stderr);
    // timeout: its own result, then the next call's top
    assert.match(
      t[1],
      /Cell 1 timed out: the call's timeout of 3 seconds ran out and the cell was interrupted; it did not stop, so the kernel was restarted and its state is lost\./,
    );
    assert.match(
      t[2],
      new RegExp(
        `^Note: This session's kernel was restarted at ${CLOCK}: a python call reached its timeout of 3 seconds while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\\. ${GONE}\\n\\(no output\\)$`,
      ),
    );
    // restart on request
    assert.match(t[3], /^Restarted python session "default": it runs a new kernel\. Its state is lost/);
    assert.match(
      t[4],
      new RegExp(
        `^Note: This session's kernel was restarted at ${CLOCK} on request \\(the kernels tool's restart\\), so its state is lost\\. ${GONE}\\nFalse$`,
      ),
    );
    // death
    assert.match(
      t[6],
      /The kernel died while cell 1 ran \(kernel process ended: exit code 1\)\. It was restarted: all state is gone/,
    );
    assert.match(
      t[7],
      new RegExp(
        `^Note: This session's kernel died at ${CLOCK} while cell 1 of a python call ran \\(kernel process ended: exit code 1\\); it was restarted, and its state is lost\\. ${GONE}\\nFalse$`,
      ),
    );
    assert.equal(t[8], "again", "said once");
  });

  test("the call that evicts an idle kernel for a fifth one names it; the next call there says it was replaced", async () => {
    const dir = await tempDir();
    await writeNb(join(dir, "n.ipynb"), [["code", "v = 'kept'"]]);
    const { results, stderr } = await batch(dir, [
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb" } },
      ...["s1", "s2", "s3", "s4"].map((session) => ({
        tool: "python",
        params: { session, cells: [{ code: "print('in', 1)" }] },
      })),
      { tool: "python", params: { session: "s4", cells: [{ code: "print('again')" }] } },
      { tool: "python", params: { notebook_path: "n.ipynb", cells: [{ code: "print(v)" }] } },
    ]);
    const t = texts(results);
    assert.equal(t.length, 7, stderr);
    for (const i of [1, 2, 3]) assert.equal(t[i], "in 1");
    assert.match(
      t[4],
      new RegExp(
        `^Note: to make room for this call's kernel, the kernel of ${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/n\\.ipynb was shut down at ${CLOCK} \\(unused for \\d+ (seconds?|minutes?); at most 4 kernels are kept: python sessions and notebook kernels together, and the least recently used idle one goes\\)\\. Its variables, imports and other state are gone; the next run of that notebook \\(or python call in its kernel\\) starts a new kernel and says so; its cells must run again for their state\\.\\nin 1$`,
      ),
    );
    assert.equal(t[5], "again", "said once");
    assert.match(
      t[6],
      new RegExp(`^Note: The notebook's kernel was shut down at ${CLOCK} to make room for another kernel`),
    );
    // this call evicted the least recently used idle kernel in turn: python session "s1"
    assert.match(
      t[6],
      /\nNote: to make room for this call's kernel, python session "s1" \(cwd [^)]+\) was shut down at /,
    );
    assert.match(t[6], /NameError: name 'v' is not defined/);
  });

  test("a notebook cell that ignored the interrupt restarted the kernel: the next run's hint for the cells above leaves it out", async () => {
    const dir = await tempDir();
    await writeNb(join(dir, "n.ipynb"), [
      ["code", "a = 1"],
      ["code", deaf(join(dir, "ready"))],
      ["code", "print(a)"],
    ]);
    const { results, stderr } = await batch(dir, [
      // The kernel started first, with no timeout: the 3 s below are the cells' alone, on a loaded machine too.
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb", cell_index: 0 } },
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb", timeout: 3 } },
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb", cell_index: 2 } },
    ]);
    const t = texts(results).slice(1);
    assert.match(
      t[0],
      /Cell 1 timed out: .*it did not stop, so the kernel was restarted and its state is lost\./,
      stderr,
    );
    assert.match(
      t[1],
      new RegExp(
        `\\nNote: The notebook's kernel was restarted at ${CLOCK}: a run of n\\.ipynb reached its timeout of 3 seconds while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\\. ${GONE}\\n`,
      ),
    );
    assert.match(
      t[1],
      /\nNote: the code cells 0-1 above the first selected cell have not run in the notebook's kernel since it started: what they define may not exist\. Cell 1 is left out: its last run lost the kernel's state \(it did not stop when interrupted, so the kernel was restarted\), and running it again would do the same until it is fixed\. To run the other one with the selection: \{"action":"run","notebook_path":"n\.ipynb","cell_range":\[0,0\]\}, then \{"action":"run","notebook_path":"n\.ipynb","cell_range":\[2,2\]\}\.\n/,
    );
    assert.doesNotMatch(t[1], /"cell_range":\[0,2\]/);
  });
});
