/**
 * What the model is told about kernel state (docs/kernel-state.md), on real kernels, through the
 * tool objects and through `nbagent batch`/`call`: a swept or evicted kernel is announced, a cell
 * that kills its kernel is not run again and its notebook run is an error, notebook kernels have no
 * agent helpers, failure hints follow from what ran, and a fresh notebook kernel says so.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { batch, type Json, nbagent, readNb, resultText, tempDir, validate, writeNb } from "./helpers.js";

const toolboxes: Toolbox[] = [];
after(async () => {
  await Promise.all(toolboxes.map((t) => t.dispose()));
});

function toolbox(cwd: string, runtime: Parameters<typeof createToolbox>[0]["runtime"] = {}) {
  const t = createToolbox({
    settings: testSettings(),
    cwd,
    runtime: { stateRoot: join(cwd, ".state"), ...runtime },
  });
  toolboxes.push(t);
  const byName = (name: string) => t.tools.find((x) => x.name === name)!;
  return {
    t,
    py: (params: Json) => byName("python").execute("t", params) as Promise<Json>,
    nb: (params: Json) => byName("notebook").execute("t", params) as Promise<Json>,
  };
}

/** A notebook of code cells (ids c0, c1, …), written by nbformat. */
function notebook(dir: string, name: string, sources: string[]): Promise<string> {
  return writeNb(
    join(dir, name),
    sources.map((s) => ["code", s] as ["code", string]),
  );
}

describe("kernel state, as the model reads it", { concurrency: true }, () => {
  test("a python session swept while idle: the next result says the kernel was replaced, why and when", async () => {
    const dir = await tempDir();
    const { t, py } = toolbox(dir, { sweepIntervalMs: 3_600_000 });
    await py({ cells: [{ code: "x = 1" }] });
    t.runtime.sessions.sweep(Date.now() + 6 * 60_000);
    const r = await py({ cells: [{ code: "print(x)" }] });
    const text = resultText(r);
    assert.match(
      text,
      /^Note: This session's kernel was shut down at \d\d:\d\d:\d\d after \d+ (minutes|seconds?) unused \(kernels idle for 5 minutes are shut down\)\. This call runs in a new kernel: variables, imports and other state from earlier calls are gone\.\n/,
    );
    assert.match(text, /NameError/);
    assert.equal(r.details.replaced.why, "idle");
    // Said once: the call after it has no note.
    assert.doesNotMatch(resultText(await py({ cells: [{ code: "x = 2" }] })), /Note:/);
  });

  test("the keep rules the texts state are the runtime's own (here 2 minutes idle, 3 kernels kept)", async () => {
    const dir = await tempDir();
    const { t, py } = toolbox(dir, { sweepIntervalMs: 3_600_000, idleTimeoutMs: 120_000, maxSessions: 3 });
    const described = (name: string) => t.tools.find((x) => x.name === name)!.description;
    assert.match(
      described("python"),
      /the kernel is idle for 2 minutes, or a new kernel is needed beyond the 3 kept \(at most 3,/,
    );
    assert.match(described("notebook"), /a kernel idle for 2 minutes is replaced/);
    assert.match(
      described("notebook"),
      /beyond the 3 kept \(at most 3: python sessions and notebook kernels together\)/,
    );
    assert.doesNotMatch(described("python") + described("notebook"), /5 minutes|4 kept|at most 4/);
    await py({ cells: [{ code: "x = 1" }] });
    t.runtime.sessions.sweep(Date.now() + 3 * 60_000);
    const text = resultText(await py({ cells: [{ code: "print(x)" }] }));
    assert.match(
      text,
      /^Note: This session's kernel was shut down at \d\d:\d\d:\d\d after \d+ (minutes|seconds?) unused \(kernels idle for 2 minutes are shut down\)\./,
    );
  });

  test("a notebook kernel swept while idle: the next run says so and which cells above did not run in the new kernel", async () => {
    const dir = await tempDir();
    const { t, nb } = toolbox(dir, { sweepIntervalMs: 3_600_000 });
    await notebook(dir, "n.ipynb", ["a = 1", "print(a + 1)"]);
    assert.equal((await nb({ action: "run", notebook_path: "n.ipynb" })).isError, undefined);
    t.runtime.sessions.sweep(Date.now() + 6 * 60_000);
    const r = await nb({ action: "run", notebook_path: "n.ipynb", cell_index: 1 });
    const text = resultText(r);
    assert.match(text, /Note: The notebook's kernel was shut down at .* unused/);
    assert.match(
      text,
      /Note: this run started the notebook's kernel, and the code cell 0 above the first selected cell did not run in it: what it defines does not exist yet\./,
    );
    assert.match(text, /NameError/);
  });

  test("python sessions and notebook kernels share the limit of 4: the evicted one is announced (nbagent batch)", async () => {
    const dir = await tempDir();
    await notebook(dir, "n.ipynb", ["v = 'kept'"]);
    const calls = [
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb" } },
      ...["s1", "s2", "s3", "s4"].map((session) => ({
        tool: "python",
        params: { session, cells: [{ code: "1" }] },
      })),
      { tool: "python", params: { notebook_path: "n.ipynb", cells: [{ code: "print(v)" }] } },
    ];
    const { results, stderr } = await batch(dir, calls);
    assert.equal(results.length, 6, stderr);
    const text = resultText(results[5]);
    assert.match(
      text,
      /^Note: The notebook's kernel was shut down at \d\d:\d\d:\d\d to make room for another kernel \(at most 4 are kept: python sessions and notebook kernels together; the least recently used idle one goes\)\. This call runs in a new kernel/,
    );
    assert.match(text, /NameError: name 'v' is not defined/);
  });

  test("a notebook cell that kills its kernel: an error naming the cell, run once, later cells listed (nbagent call)", async () => {
    const dir = await tempDir();
    const side = join(dir, "side.txt");
    const path = await notebook(dir, "die.ipynb", [
      "print('a')",
      `import os\nopen(${JSON.stringify(side)}, 'a').write('x')\nos._exit(1)`,
      "print('c')",
      "print('d')",
    ]);
    const r = await nbagent(
      ["call", "notebook", JSON.stringify({ action: "run", notebook_path: "die.ipynb" }), "--json"],
      {
        cwd: dir,
      },
    );
    assert.equal(r.code, 1, r.stderr);
    const result = JSON.parse(r.stdout);
    assert.equal(result.isError, true);
    assert.equal(readFileSync(side, "utf8"), "x", "the cell ran once");
    const text = resultText(result);
    assert.match(text, /^Ran 2 of 4 code cells selected in die\.ipynb \(0-based cell indices\)\./);
    assert.match(
      text,
      /The kernel died while cell 1 ran \(kernel process ended: exit code 1\)\. It was restarted: all state is gone \(variables, imports\), and cell 1 was not run again/,
    );
    assert.match(text, /\nCells 2-3 did not run\.\n/);
    assert.match(
      text,
      /\nThe kernel's state is gone, so cells above cell 1 must run again too\. To run the notebook from the top once cell 1 is fixed: \{"action":"run","notebook_path":"die\.ipynb"\}$/,
    );
    assert.doesNotMatch(text, /running again|too many/);
    assert.deepEqual(
      result.details.ranCells.map((c: Json) => [c.index, c.status]),
      [
        [0, "ok"],
        [1, "aborted"],
        [2, "not-run"],
        [3, "not-run"],
      ],
    );
    assert.equal(await validate(path), "ok");
    const saved = await readNb(path);
    assert.equal(saved.cells[0].outputs[0].text.join(""), "a\n");
  });

  test("a kernel that stopped responding (sys.stdout set to None): the text says so, not 'a larger timeout' (nbagent batch)", async () => {
    const dir = await tempDir();
    const calls = [
      { tool: "python", params: { cells: [{ code: "before = 1" }] } },
      { tool: "python", params: { cells: [{ code: "import sys\nsys.stdout = None" }], timeout: 5 } },
      { tool: "python", params: { cells: [{ code: "print('before' in globals())" }] } },
    ];
    const { results, stderr } = await batch(dir, calls);
    assert.equal(results.length, 3, stderr);
    assert.equal(results[1].isError, true);
    assert.match(
      resultText(results[1]),
      /^\(no output\)\nCell 1 timed out because the kernel stopped responding, not because the cell was slow: when the call's timeout of 5 seconds ran out, for [3-5] seconds it was busy with no output and no reply, and it answered on its control channel but could not finish even that request\. The interrupt did not help, so the kernel was restarted and its state is lost\. A larger timeout would not help\./,
    );
    assert.doesNotMatch(resultText(results[1]), /Pass a larger timeout/);
    // The next result says the state went, at its top (docs/kernel-state.md: one rule for every restart).
    assert.match(
      resultText(results[2]),
      /^Note: This session's kernel was restarted at \d\d:\d\d:\d\d: a python call reached its timeout of 5 seconds while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\. This call runs in the new kernel: [^\n]*\nFalse$/,
    );
  });

  test("a timeout whose interrupt kills the kernel: one story, the death, never 'keeps its state' (nbagent batch)", async () => {
    const dir = await tempDir();
    const calls = [
      { tool: "python", params: { cells: [{ code: "before = 1" }] } },
      {
        tool: "python",
        params: {
          cells: [
            {
              code: "import os, signal, time\nsignal.signal(signal.SIGINT, lambda *a: os._exit(3))\nprint('in', flush=True)\ntime.sleep(600)",
            },
            { code: "print('after')" },
          ],
          timeout: 3,
        },
      },
      { tool: "python", params: { cells: [{ code: "print('before' in globals())" }] } },
    ];
    const { results, stderr } = await batch(dir, calls);
    assert.equal(results.length, 3, stderr);
    const text = resultText(results[1]);
    assert.equal(results[1].isError, true);
    assert.match(
      text,
      /^\[1\/2\]\nin\nThe kernel died while cell 1 ran \(kernel process ended: exit code 3\)[^\n]*all state is gone[^\n]*\nCell 1 reached the call's timeout of 3 seconds and was interrupted; the kernel died meanwhile, so none of its state is kept \(see above\)\.\nCell 2 did not run\.$/,
    );
    assert.doesNotMatch(text, /keeps its state|Pass a larger timeout/);
    // The restart the deadline prevented happens now, and is not refused as a second one in a row.
    assert.match(
      resultText(results[2]),
      /^Note: This session's kernel died at \d\d:\d\d:\d\d while cell 1 of a python call ran \(kernel process ended: exit code 3\); restarting it failed then, so this call started a new one\. This call runs in the new kernel: [^\n]*\nFalse\nThis session's kernel had died since the last call; it was restarted before cell 1, and its earlier state is gone\.$/,
    );
  });

  test("notebook kernels have no agent helpers; python sessions do", async () => {
    const dir = await tempDir();
    const { py, nb } = toolbox(dir);
    await notebook(dir, "h.ipynb", [
      "print(callable(globals().get('tree')), callable(globals().get('read')))",
    ]);
    const r = await nb({ action: "run", notebook_path: "h.ipynb" });
    assert.match(resultText(r), /False False/);
    const p = await py({ cells: [{ code: "print(callable(tree), callable(read))" }] });
    assert.equal(resultText(p), "True True");
  });

  test("failure hints follow from what ran in this call", async () => {
    const dir = await tempDir();
    const { nb, py } = toolbox(dir);
    await notebook(dir, "f.ipynb", ["base = 1", "print(base + 1)", "1/0", "print('after')"]);
    // Cells 1-2 on a fresh kernel: cell 0 never ran, so cell 1 fails; nothing "earlier succeeded".
    const r = await nb({ action: "run", notebook_path: "f.ipynb", cell_range: [1, 2] });
    const text = resultText(r);
    assert.equal(r.isError, true);
    assert.match(text, /the code cell 0 above the first selected cell did not run in it/);
    assert.match(text, /\nCell 1 failed: NameError: name 'base' is not defined\.\nCell 2 did not run\.\n/);
    assert.doesNotMatch(text, /succeeded|exit code|persists/);
    // A failure after cells that ran: those are named, and so is what did not run.
    const all = resultText(await nb({ action: "run", notebook_path: "f.ipynb" }));
    assert.match(
      all,
      /\nCell 2 failed: ZeroDivisionError: division by zero\.\nCells 0-1 ran in this call; their state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\./,
    );
    // The python tool, first cell failing: no claim about earlier cells.
    const p = resultText(await py({ cells: [{ code: "1/0" }, { code: "print(2)" }] }));
    assert.match(p, /\nCell 1 failed: ZeroDivisionError: division by zero\.\nCell 2 did not run\.$/);
  });

  test("cells above the selection that never ran in this kernel are named on every run, not only the one that started it", async () => {
    const dir = await tempDir();
    const { nb } = toolbox(dir);
    await notebook(dir, "h.ipynb", ["x = 5", "y = 1", "print(x * 2)"]);
    const todo =
      'To run them with the selection: {"action":"run","notebook_path":"h.ipynb","cell_range":[0,2]} (or the whole notebook: {"action":"run","notebook_path":"h.ipynb"}).';
    const first = resultText(await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 2 }));
    assert.ok(
      first.includes(
        `Note: this run started the notebook's kernel, and the code cells 0-1 above the first selected cell did not run in it: what they define does not exist yet. ${todo}`,
      ),
      first,
    );
    assert.match(first, /NameError: name 'x' is not defined/);
    // The same failure again on the kernel the first run started: the hint still says why.
    const second = resultText(await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 2 }));
    assert.ok(
      second.includes(
        `Note: the code cells 0-1 above the first selected cell have not run in the notebook's kernel since it started: what they define may not exist. ${todo}`,
      ),
      second,
    );
    assert.doesNotMatch(second, /this run started/);
    assert.match(second, /NameError: name 'x' is not defined/);
    // Cell 0 runs; only cell 1 is still missing, and then none.
    assert.doesNotMatch(
      resultText(await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 0 })),
      /Note:/,
    );
    const third = resultText(await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 2 }));
    assert.match(
      third,
      /Note: the code cell 1 above the first selected cell has not run in the notebook's kernel since it started: what it defines may not exist\. To run it with the selection: \{"action":"run","notebook_path":"h\.ipynb","cell_range":\[1,2\]\}/,
    );
    assert.match(third, /\n10$/);
    await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 1 });
    const fourth = resultText(await nb({ action: "run", notebook_path: "h.ipynb", cell_index: 2 }));
    assert.doesNotMatch(fourth, /Note:|above the first selected cell/);
    assert.match(fourth, /\n10$/);
  });

  test("python with notebook_path on a kernel that was just started says none of the notebook's cells ran", async () => {
    const dir = await tempDir();
    const { py, nb } = toolbox(dir);
    await notebook(dir, "p.ipynb", ["z = 5"]);
    const fresh = resultText(
      await py({ notebook_path: "p.ipynb", cells: [{ code: "print('z' in globals())" }] }),
    );
    assert.match(
      fresh,
      /^Note: p\.ipynb's kernel was started for this call: none of the notebook's cells have run in it, so their variables do not exist\. Run them first with the notebook tool \(action run\)\.\nFalse$/,
    );
    await nb({ action: "run", notebook_path: "p.ipynb" });
    assert.equal(resultText(await py({ notebook_path: "p.ipynb", cells: [{ code: "print(z)" }] })), "5");
  });

  test("a notebook run that times out lists the cells left unrun and the call that continues", async () => {
    const dir = await tempDir();
    const { nb } = toolbox(dir);
    await notebook(dir, "t.ipynb", ["print('one')", "import time\ntime.sleep(60)", "print('three')"]);
    // The kernel is started first, so the timeout falls on cell 1 whatever the machine's load.
    assert.equal((await nb({ action: "run", notebook_path: "t.ipynb", cell_index: 0 })).isError, undefined);
    const r = await nb({ action: "run", notebook_path: "t.ipynb", timeout: 3 });
    const text = resultText(r);
    assert.equal(r.isError, true);
    assert.match(
      text,
      /\nCell 1 timed out: the call's timeout of 3 seconds ran out and the cell was interrupted; the kernel keeps its state\. Pass a larger timeout for long work\.\nCell 0 ran in this call; its state persists, so only cell 1 onward needs to run again\.\nCell 2 did not run\.\nTo run from cell 1 on \(with a larger timeout if it needs one\): \{"action":"run","notebook_path":"t\.ipynb","cell_range":\[1,2\]\}$/,
    );
  });
});
