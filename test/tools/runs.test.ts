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
import { batch, type Json, nbagent, resultText, spawnNbagent, writeNb } from "../run/helpers.js";
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
      /^Still running after 1 s: run (r\d+), python call; cell 2 is running\. It goes on in the background until it ends or its timeout of 600 s stops it \(in \d+ s\)\.\n/,
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
    // Only what is new since the last look: cell 1 and cell 2's two lines were shown before.
    assert.match(
      t3,
      new RegExp(
        `^Run ${id} \\(python call\\) finished after \\d+ s\\. Its result:\\n… \\[cell 1 shown before\\]\\n\\[2/3\\]\\n… \\[lines 1-2 shown before\\]\\n\\[3/3\\]\\n42$`,
      ),
    );
    // The whole output is still in details (and the artifact).
    assert.deepEqual(
      done.details.cells.map((c: Json) => c.status),
      ["ok", "ok", "ok"],
    );
    assert.equal(done.details.run.status, "finished");
    // Kept: asking again gives the same result.
    assert.match(resultText(await runs({ run_id: id })), /\[3\/3\]\n42$/);
  });

  test("interrupt stops the running cell; the kernel keeps its state", async () => {
    const { cwd, py, runs } = toolbox();
    await py({ cells: [{ code: "kept = 'yes'" }], wait: 600 });
    const r = await py({
      cells: [{ code: `print('in', flush=True)\n${gate(join(cwd, "never"))}` }, { code: "print('not me')" }],
      timeout: 600,
    });
    const id = /run (r\d+)/.exec(resultText(r))![1];
    // Interrupted once the cell is executing (its output came): an interrupt that reaches an idle
    // kernel, before the execution began, is another case.
    let look = resultText(r);
    while (!/^in$/m.test(look)) look = resultText(await runs({ run_id: id, wait: 1 }));
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
      /^Still running after 1 s: run (r\d+), run of long\.ipynb; cell [01] is running\. It goes on in the background, saving each cell's outputs into the notebook as it finishes, until it ends or its timeout of 600 s stops it \(in \d+ s\)\./,
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

  test("without a timeout a run has no time limit, and its text says so; with one, when it stops", async () => {
    const { cwd, py, nb, runs } = toolbox();
    await py({ cells: [{ code: "1" }], wait: 600 }); // the kernel is up
    const g = join(cwd, "g");
    const r = await py({ cells: [{ code: `print('a', flush=True)\n${gate(g)}\nprint('b')` }] });
    const text = resultText(r);
    assert.match(
      text,
      /^Still running after 1 s: run (r\d+), python call; cell 1 is running\. It goes on in the background with no time limit: it runs until it ends or you interrupt it\.\n/,
    );
    assert.equal(r.details.run.timeoutSeconds, undefined, "no timer is set");
    const id = /run (r\d+)/.exec(text)![1];
    const later = await runs({ run_id: id, wait: 1 });
    assert.match(
      resultText(later),
      /^Still running \(\d+ s so far\): .* with no time limit: it runs until it ends or you interrupt it\.\n/,
    );
    writeFileSync(g, "");
    const done = await runs({ run_id: id, wait: 600 });
    assert.equal(done.isError, undefined, resultText(done));
    assert.match(resultText(done), /(\n… \[line 1 shown before\]|\na)\nb$/);

    // A notebook run without a timeout: no timer either (not the one-shot default of 60 s).
    const g2 = join(cwd, "g2");
    await writeNb(join(cwd, "n.ipynb"), [["code", `${gate(g2)}\nprint('ran')`]]);
    const n = await nb({ action: "run", notebook_path: "n.ipynb" });
    assert.match(
      resultText(n),
      /^Still running after 1 s: run (r\d+), run of n\.ipynb; (cell 0 is running|its kernel is starting or busy)\. It goes on in the background, saving each cell's outputs into the notebook as it finishes, with no time limit: it runs until it ends or you interrupt it\./,
    );
    assert.equal(n.details.run.timeoutSeconds, undefined, "no timer is set");
    writeFileSync(g2, "");
    const ran = await runs({ run_id: /run (r\d+)/.exec(resultText(n))![1], wait: 600 });
    assert.match(resultText(ran), /Ran 1 of 1 code cell selected in n\.ipynb/);

    // With a timeout, the text says when it stops.
    const t = await py({ cells: [{ code: gate(join(cwd, "never")) }], timeout: 100 });
    assert.match(
      resultText(t),
      /^Still running after 1 s: run r\d+, python call; cell 1 is running\. It goes on in the background until it ends or its timeout of 100 s stops it \(in (9\d|100) s\)\.\n/,
    );
    assert.equal(t.details.run.timeoutSeconds, 100);
    await runs({ run_id: /run (r\d+)/.exec(resultText(t))![1], action: "interrupt" });
  });

  test("the final result's images are sent once: asked again, it says they were sent before", async () => {
    const { cwd, py, runs } = toolbox();
    await py({ cells: [{ code: "1" }], wait: 600 });
    const g = join(cwd, "g");
    const r = await py({
      cells: [
        {
          code: `${gate(g)}\nimport base64, io\nfrom PIL import Image\nfrom IPython.display import display\nb = io.BytesIO(); Image.new('RGB', (8, 8)).save(b, 'PNG')\ndisplay({'image/png': base64.b64encode(b.getvalue()).decode()}, raw=True)\nprint('drawn')`,
        },
      ],
    });
    const id = /run (r\d+)/.exec(resultText(r))![1];
    writeFileSync(g, "");
    const done = await runs({ run_id: id, wait: 600 });
    assert.equal(done.content.filter((c: Json) => c.type === "image").length, 1, resultText(done));
    assert.match(
      resultText(done),
      new RegExp(`^Run ${id} \\(python call\\) finished after \\d+ s\\. Its result:\\n`),
    );
    const again = await runs({ run_id: id });
    assert.equal(again.content.filter((c: Json) => c.type === "image").length, 0);
    assert.match(
      resultText(again),
      new RegExp(
        `^Run ${id} \\(python call\\) finished after \\d+ s\\. Its image was sent with this result before and is not sent again\\. Its result:\\n`,
      ),
    );
  });

  test("a host without background runs (one-shot) waits for the whole call; wait does not apply", async () => {
    const cwd = mkdtempSync(join(root, "o-"));
    const box = createToolbox({
      settings: testSettings(),
      cwd,
      runtime: { stateRoot: join(root, "state") },
      waitSeconds: 1,
      background: false,
    });
    boxes.push(box);
    const call = (name: string, params: Json) =>
      box.tools.find((t) => t.name === name)!.execute("t", params) as Promise<Json>;
    // Its first call starts a kernel: far longer than a 10 ms wait.
    const r = await call("python", { cells: [{ code: "print('done')" }], wait: 0.01 });
    assert.equal(resultText(r), "done");
    assert.equal(r.details.run, undefined);
    // Its default timeout is the documented one, and its description says so.
    assert.match(box.tools.find((t) => t.name === "python")!.description, /timeout \(seconds, default 30\)/);
    const gone = await call("runs", { run_id: "r1" });
    assert.equal(gone.isError, true);
    assert.match(
      resultText(gone),
      /^Error: No run "r1" here: this host has no background runs\. Each call here \(a one-shot nbagent call\) is waited for to its end/,
    );
  });

  test("through nbagent call: a one-shot call waits for its end past its wait, and says nothing of a background", async () => {
    const cwd = mkdtempSync(join(root, "c-"));
    // The cell outlasts the wait (the kernel's start alone does); only the timeout bounds the call.
    const r = await nbagent(
      [
        "call",
        "python",
        JSON.stringify({
          cells: [{ code: "import time\ntime.sleep(2)\nprint('done')" }],
          wait: 1,
          timeout: 120,
        }),
        "--cwd",
        cwd,
      ],
      { cwd },
    );
    assert.equal(r.stdout, "done\n", r.stderr);
    assert.equal(r.code, 0, r.stderr);
    const runs = await nbagent(["call", "runs", '{"run_id":"r1"}', "--cwd", cwd], { cwd });
    assert.equal(runs.code, 1, runs.stderr);
    assert.match(runs.stdout, /^Error: No run "r1" here: this host has no background runs\./);
  });

  test("through nbagent batch: a signal while it waits for a run at the end of its input interrupts it and prints its result", async () => {
    const cwd = mkdtempSync(join(root, "s-"));
    const child = spawnNbagent(["batch", "--cwd", cwd]);
    let stdout = "";
    let stderr = "";
    let sent = false;
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      if (!sent && /input ended; waiting for run/.test(stderr)) sent = child.kill("SIGINT"); // once: a second exits at once
    });
    const call = { cells: [{ code: gate(join(cwd, "never")) }], wait: 1 };
    const warm = { tool: "python", params: { cells: [{ code: "1" }] } }; // the cell starts at once
    child.stdin.end(`${JSON.stringify(warm)}\n${JSON.stringify({ tool: "python", params: call })}\n`);
    const code = await new Promise((resolve) => child.on("close", resolve));
    const results = stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    assert.equal(results.length, 3, `${stdout}\n${stderr}`);
    assert.equal(code, 130, stderr);
    const end = resultText(results[2]);
    assert.match(end, /^Run r2 \(python call\) finished after \d+ s\. Its result:\n/);
    assert.match(end, /\nCell 1 was interrupted: .*nbagent is exiting \(received SIGINT\)/);
  });

  test("bad run ids and parameters are errors that name what to do", async () => {
    const { runs } = toolbox();
    const r = await runs({ run_id: "r999" });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /^Error: No run "r999" here \(none is running\)\./);
    const bad = await runs({ id: "r1" });
    assert.equal(bad.isError, true);
    assert.equal(
      resultText(bad),
      'Error: Unknown parameter "id" (did you mean run_id?). The runs tool takes: run_id, action, wait. Pass {"run_id":"r1"}.',
    );
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

  test("through nbagent batch: at the end of the input the runs still going are waited for and their results printed", async () => {
    const cwd = mkdtempSync(join(root, "e-"));
    const g = join(cwd, "gate");
    await writeNb(join(cwd, "n.ipynb"), [["code", `${gate(g)}\nprint('nb done')`]]);
    const lines = [
      { tool: "python", params: { cells: [{ code: "1" }] } }, // the kernel is up
      {
        tool: "python",
        params: { cells: [{ code: `print('a', flush=True)\n${gate(g)}\nprint('b')` }], wait: 1 },
      },
      { tool: "notebook", params: { action: "run", notebook_path: "n.ipynb", wait: 1 } },
    ];
    // Nothing opens the gate before the input ends: the test does once the batch says it waits.
    const { code, stdout, stderr } = await nbagent(["batch", "--cwd", cwd], {
      input: `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
      onStderr: (soFar) => {
        if (/input ended; waiting for run/.test(soFar) && !existsSync(g)) writeFileSync(g, "");
      },
    });
    const results = stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    assert.equal(results.length, 5, `${stdout}\n${stderr}`);
    assert.equal(code, 0, stderr);
    const first = resultText(results[1]);
    assert.match(first, /^Still running after 1 s: run (r\d+), python call; .* with no time limit/);
    assert.match(resultText(results[2]), /^Still running after 1 s: run (r\d+), run of n\.ipynb; /);
    assert.match(stderr, /input ended; waiting for run r\d+ \(python call\) to end/);
    const id = /run (r\d+)/.exec(first)![1];
    assert.match(
      resultText(results[3]),
      new RegExp(
        `^Run ${id} \\(python call\\) finished after \\d+ s\\. Its result:\\n(… \\[line 1 shown before\\]|a)\\nb$`,
      ),
    );
    assert.match(
      resultText(results[4]),
      /^Run r\d+ \(run of n\.ipynb\) finished after \d+ s\. Its result:\nRan 1 of 1 code cell selected in n\.ipynb/,
    );
  });
});
