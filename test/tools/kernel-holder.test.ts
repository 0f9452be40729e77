/**
 * What the model is told about its kernel over time, through the tool objects on real kernels:
 * - a call whose cell ignores the interrupt (a cancel, a timeout) loses the kernel's state; the next
 *   call on that session (python, or a notebook run in the notebook's kernel) says so at the top,
 *   once, whether or not the causing call's own result (which says it too) was read
 *   (docs/kernel-state.md);
 * - a call that times out waiting for its session's queue names the call holding the kernel: the
 *   run (id, what, cell, how to wait for it or stop it) or, with no runs, the call and its cell
 *   (docs/python-tool.md, "The session's queue").
 * Cells block on gate files the test creates, and the cancel fires on the cell's own output.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createRuntime } from "../../src/runtime/index.js";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { ToolResult } from "../../src/tools/types.js";
import { type Json, resultText, writeNb } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-holder-"));
const boxes: { dispose(): Promise<void> }[] = [];
after(async () => {
  await Promise.all(boxes.map((b) => b.dispose()));
  rmSync(root, { recursive: true, force: true });
});

function toolbox(waitSeconds = 600) {
  const cwd = mkdtempSync(join(root, "w-"));
  const box: Toolbox = createToolbox({
    settings: testSettings(),
    cwd,
    runtime: { stateRoot: join(root, "state") },
    waitSeconds,
  });
  boxes.push(box);
  const tool =
    (name: string) => (params: Json, signal?: AbortSignal, onUpdate?: (p: ToolResult<unknown>) => void) =>
      box.tools.find((t) => t.name === name)!.execute("t", params, signal, onUpdate) as Promise<Json>;
  return { cwd, py: tool("python"), nb: tool("notebook"), runs: tool("runs") };
}

/** Python that blocks until `path` exists. */
const gate = (path: string) =>
  `import os, time\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)`;

/**
 * Starts a call whose cell prints 'holding' and then blocks on the gate file `g`; resolves once the
 * cell is under way (the kernel is held), with the call's own result still to come.
 */
async function holdKernel(
  call: (params: Json, onUpdate: (p: ToolResult<unknown>) => void) => Promise<unknown>,
  g: string,
  extra: Json = {},
): Promise<{ first: Promise<unknown> }> {
  let started!: () => void;
  const holding = new Promise<void>((resolve) => {
    started = resolve;
  });
  const first = call({ cells: [{ code: `print('holding', flush=True)\n${gate(g)}` }], ...extra }, (p) => {
    if (resultText(p).includes("holding")) started();
  });
  await holding;
  return { first };
}

/** A cell that ignores SIGINT (so an interrupt cannot stop it) and says when it is under way. */
const DEAF =
  "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('deaf', flush=True)\ntime.sleep(600)";

/** Cancels the call once its output shows `word`. */
function cancelOn(word: string) {
  const abort = new AbortController();
  const onUpdate = (p: ToolResult<unknown>) => {
    if (resultText(p).includes(word)) abort.abort();
  };
  return { signal: abort.signal, onUpdate };
}

const RESTARTED = (owner: string, call: string, cell: string) =>
  new RegExp(
    `^Note: ${owner} was restarted at \\d\\d:\\d\\d:\\d\\d: a ${call} was cancelled while ${cell} ran, and ${cell} did not stop when interrupted, so the kernel was restarted and its state is lost\\. This call runs in the new kernel: variables, imports and other state from earlier calls are gone\\.\\n`,
  );

describe("what the next call is told", { concurrency: true }, () => {
  test("a cancel the cell ignores: the next python call says the state is lost, once", async () => {
    const { py } = toolbox();
    await py({ cells: [{ code: "x = 1" }] });
    const c = cancelOn("deaf");
    // Its own result says it (a host that keeps a cancelled call's result, as pi does, shows it);
    // an MCP client gets none, so the next call says it too.
    const own = await py({ cells: [{ code: DEAF }], timeout: 900 }, c.signal, c.onUpdate);
    assert.match(
      resultText(own),
      /\nCell 1 was interrupted: the call was cancelled; it did not stop, so the kernel was restarted and its state is lost\.$/,
    );
    const next = await py({ cells: [{ code: "print(x)" }] });
    const text = resultText(next);
    assert.match(text, RESTARTED("This session's kernel", "python call", "cell 1"));
    assert.match(text, /NameError: name 'x' is not defined/);
    const later = await py({ cells: [{ code: "print('again')" }] });
    assert.equal(resultText(later), "again", "said once");
  });

  // One rule for every restart (docs/kernel-state.md): the causing call says it, and so does the
  // next result on the session, which may be the first the model reads after it (a background run).
  test("a timeout the cell ignores says it in its own result, and the next call says it at its top, once", async () => {
    const { py } = toolbox();
    await py({ cells: [{ code: "x = 1" }] }); // the kernel is up: the timeout falls on the cell
    const r = await py({ cells: [{ code: DEAF }], timeout: 2 });
    assert.match(
      resultText(r),
      /Cell 1 timed out: .*; it did not stop, so the kernel was restarted and its state is lost\./,
    );
    const next = resultText(await py({ cells: [{ code: "print('x' in dir())" }] }));
    assert.match(
      next,
      /^Note: This session's kernel was restarted at \d\d:\d\d:\d\d: a python call reached its timeout of 2 seconds while cell 1 ran, and cell 1 did not stop when interrupted, so the kernel was restarted and its state is lost\. This call runs in the new kernel: variables, imports and other state from earlier calls are gone\.\nFalse$/,
    );
    assert.equal(resultText(await py({ cells: [{ code: "print('next')" }] })), "next", "said once");
  });

  // The cancelled run starts the notebook's kernel itself: its restart must not be cancelled with it.
  test("a cancelled notebook run that ignores the interrupt: the next call in its kernel says so, once", async () => {
    const { cwd, py, nb } = toolbox();
    await writeNb(join(cwd, "deaf.ipynb"), [
      ["code", "y = 2"],
      ["code", DEAF],
    ]);
    const c = cancelOn("deaf");
    await nb({ action: "run", notebook_path: "deaf.ipynb", timeout: 900 }, c.signal, c.onUpdate);
    const next = await py({ notebook_path: "deaf.ipynb", cells: [{ code: "print('y' in dir())" }] });
    const text = resultText(next);
    assert.match(text, RESTARTED("The notebook's kernel", "run of deaf\\.ipynb", "cell 1"));
    assert.match(text, /\nFalse$/);
    const again = await nb({ action: "run", notebook_path: "deaf.ipynb", cell_index: 0 });
    assert.doesNotMatch(resultText(again), /restarted/, "said once");
  });

  test("a call that times out in the queue names the run holding the kernel and how to follow it", async () => {
    const { cwd, py, runs } = toolbox(1);
    await py({ cells: [{ code: "1" }], wait: 600 }); // the kernel is up
    const g = join(cwd, "go");
    const first = await py({
      cells: [{ code: "print('one')" }, { code: `print('holding', flush=True)\n${gate(g)}` }],
      timeout: 600,
    });
    assert.match(resultText(first), /^Still running after 1 s: run r2, python call; cell 2 is running\./);
    const waiting = await py({ cells: [{ code: "print('two')" }], timeout: 1, wait: 600 });
    assert.equal(waiting.isError, true);
    assert.match(
      resultText(waiting),
      /^\(no output\)\nCell 1 did not run: the call's timeout of 1 second ran out while it waited for the kernel, which run r2 holds \(python call, holding it for \d+ seconds? so far; cell 2 is running\)\. Nothing ran\. To wait for r2 and get its result, call the runs tool: \{"run_id":"r2"\}; to stop it \(the kernel keeps its state unless the cell ignores the interrupt\): \{"run_id":"r2","action":"interrupt"\}\. Then call again\.$/,
    );
    writeFileSync(g, "");
    const done = await runs({ run_id: "r2", wait: 600 });
    assert.match(resultText(done), /^Run r2 \(python call\) finished after \d+ s\. Its result:/);
  });

  test("the run named is still there for the runs tool after its own call got the result", async () => {
    const { cwd, py, runs } = toolbox(600);
    await py({ cells: [{ code: "1" }] }); // the kernel is up
    const g = join(cwd, "go");
    const { first } = await holdKernel((p, u) => py(p, undefined, u), g, { timeout: 600 });
    const waiting = await py({ cells: [{ code: "print('two')" }], timeout: 1 });
    assert.match(
      resultText(waiting),
      /which run r2 holds \(python call, holding it for \d+ seconds? so far; cell 1 is running\)/,
    );
    writeFileSync(g, "");
    assert.equal(resultText((await first) as Json), "holding"); // its own call answered
    const again = await runs({ run_id: "r2" });
    assert.match(resultText(again), /^Run r2 \(python call\) finished after \d+ s\. Its result:\nholding$/);
  });

  test("a call still waiting in the queue when its wait budget ends names the run holding the kernel", async () => {
    const { cwd, py, runs } = toolbox(600);
    await py({ cells: [{ code: "1" }] }); // the kernel is up
    const g = join(cwd, "go");
    const { first } = await holdKernel((p, u) => py(p, undefined, u), g);
    const queued = await py({ cells: [{ code: "print('two')" }], wait: 1 });
    assert.match(
      resultText(queued),
      /^Still running after 1 s: run r3, python call; it waits for the kernel, which run r2 holds \(python call, holding it for \d+ seconds? so far; cell 1 is running\)\. It goes on in the background with no time limit/,
    );
    writeFileSync(g, "");
    assert.equal(resultText((await first) as Json), "holding");
    const done = await runs({ run_id: "r3", wait: 600 });
    assert.match(resultText(done), /^Run r3 \(python call\) finished after \d+ s\. Its result:\ntwo$/);
  });

  test("without runs, the holder is named by its call and cell", async () => {
    const cwd = mkdtempSync(join(root, "p-"));
    const rt = createRuntime({ settings: testSettings(), stateRoot: join(root, "state") });
    boxes.push(rt);
    const tool = createPythonTool({ cwd, runtime: rt, updateIntervalMs: 0 });
    const call = (p: unknown, onUpdate?: (r: ToolResult<unknown>) => void) =>
      tool.execute("t", p as PythonParams, undefined, onUpdate);
    const g = join(cwd, "go");
    const { first } = await holdKernel(call, g, { timeout: 600 });
    const waiting = await call({ cells: [{ code: "print('two')" }], timeout: 1 });
    assert.match(
      resultText(waiting),
      /\nCell 1 did not run: the call's timeout of 1 second ran out while it waited for the kernel, which another python call holds \(holding it for \d+ seconds? so far; cell 1 is running\)\. Nothing ran; call again when it has finished, or with a larger timeout\.$/,
    );
    writeFileSync(g, "");
    assert.equal(resultText((await first) as Json), "holding");
  });
});
