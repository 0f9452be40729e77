/**
 * Pipelined cells in a multi-cell python call, on real kernels (docs/python-tool.md, "Pipelined
 * cells"): each cell after the first is sent at the reply of the one before when that reply lets
 * the call go on — and only then, so a failing cell still stops the call before anything after it
 * runs, a cancel or timeout stops the cell sent ahead, and each output lands in its own cell.
 * Order and outcomes are asserted, never times.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, beforeEach, describe, test } from "node:test";
import { ConnectedKernel } from "../../src/kernel/index.js";
import type { AheadRequestOptions, SentAhead } from "../../src/kernel/types.js";
import { createRuntime } from "../../src/runtime/index.js";
import { createToolbox } from "../../src/tools/index.js";
import { createKernelsTool } from "../../src/tools/kernels/kernels.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { PythonToolDetails } from "../../src/tools/python/result.js";
import { RunRegistry } from "../../src/tools/runs/registry.js";
import type { ToolResult } from "../../src/tools/types.js";
import { backendCases } from "../backends.js";
import { waitFor } from "../run/helpers.js";
import { testSettings } from "../settings.js";
import { pythonToolOn } from "./python-fixture.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-pypipe-"));
const cwd = mkdtempSync(join(root, "work-"));
after(() => rmSync(root, { recursive: true, force: true }));

const NO_HANDLER_HOOK =
  "this ipykernel has no post_handler_hook/shell_stream to hold a cell between its reply and idle";
/**
 * Python for a cell that, after its reply and before its idle (ipykernel 6's post_handler_hook, for
 * this request only), pushes the reply out and waits up to 20 s for the next request on the shell
 * socket (`queued` says whether it came), then runs `then` (4-space indented lines). `orig`: when
 * ipykernel's own hook runs — "first" (SIGINT ignored again, as between any two requests), "last",
 * or "never" (the cell ends the kernel).
 */
function afterReply(
  then: string[],
  orig: "first" | "last" | "never" = "last",
  before: string[] = [],
): string {
  return [
    ...before,
    "import os, time, zmq",
    "_k = get_ipython().kernel",
    "_orig = _k.post_handler_hook",
    "def _hook():",
    "    _k.post_handler_hook = _orig",
    ...(orig === "first" ? ["    _orig()"] : []),
    "    _k.shell_stream.flush(zmq.POLLOUT)",
    "    queued = _k.shell_stream.socket.poll(20000, zmq.POLLIN)",
    ...then,
    ...(orig === "last" ? ["    _orig()"] : []),
    "_k.post_handler_hook = _hook",
  ].join("\n");
}

const text = (r: ToolResult<PythonToolDetails>) => (r.content[0] as { text: string }).text;
const py = (s: string) => JSON.stringify(s);
/** Each cell's status in the call's details, in order. */
const statuses = (r: ToolResult<PythonToolDetails>) => r.details.cells.map((c) => c.status);
let nth = 0;
const fresh = (name: string) => join(cwd, name.replace(/(\.|$)/, `-${nth++}$1`));

/** The codes the kernels were sent ahead (every backend's kernels are ConnectedKernels). */
const sentAhead: string[] = [];
const original = ConnectedKernel.prototype.sendAhead;
beforeEach(() => {
  sentAhead.length = 0;
  ConnectedKernel.prototype.sendAhead = function (code: string, options?: AheadRequestOptions) {
    const sent: SentAhead | undefined = original.call(this, code, options);
    if (sent) sentAhead.push(code);
    return sent;
  };
});
afterEach(() => {
  ConnectedKernel.prototype.sendAhead = original;
});

for (const backend of backendCases())
  describe(backend.name, () => {
    const fixture = pythonToolOn(backend, { root, cwd });
    const call = (
      params: PythonParams,
      signal?: AbortSignal,
      onUpdate?: (p: ToolResult<PythonToolDetails>) => void,
    ) => fixture.tool.execute("t", params, signal, onUpdate);

    /**
     * The tests that hold a cell between its reply and its idle replace ipykernel 6's
     * `post_handler_hook` and read its `shell_stream`; a kernel without them (another ipykernel)
     * skips those tests, and the scripted kernel's (test/kernel/execution-ahead.unit.test.ts) cover
     * the same orders on any machine.
     */
    let handlerHook: Promise<boolean> | undefined;
    const hasHandlerHook = () =>
      (handlerHook ??= call({
        cells: [
          {
            code: "_k = get_ipython().kernel\nprint(callable(getattr(_k, 'post_handler_hook', None)) and hasattr(getattr(_k, 'shell_stream', None), 'flush'))\ndel _k",
          },
        ],
      }).then((r) => text(r) === "True"));

    test("quick cells: each after the first is sent at the reply before it; outputs, progress and record in order", async () => {
      const n = 25;
      const codes = Array.from({ length: n }, (_, i) => `print(${i})`);
      const running: number[] = [];
      const r = await call({ cells: codes.map((code) => ({ code })), timeout: 120 }, undefined, (u) => {
        const cell = u.details.cells.find((c) => c.status === "running");
        if (cell && running[running.length - 1] !== cell.index) running.push(cell.index);
      });
      assert.equal(r.isError, undefined, text(r));
      assert.deepEqual(sentAhead, codes.slice(1));
      assert.equal(text(r), codes.map((_, i) => `[${i + 1}/${n}]\n${i}`).join("\n"));
      assert.deepEqual(statuses(r), Array(n).fill("ok"));
      const counts = r.details.cells.map((c) => c.executionCount as number);
      assert.deepEqual(
        counts,
        counts.map((_, i) => counts[0] + i),
      );
      assert.deepEqual(
        running,
        codes.map((_, i) => i + 1),
        "progress names every cell, in order",
      );
      // The session's record has the same cells, in order, each with its own output.
      const out = fresh("session.ipynb");
      const exported = await call({ export_notebook: out });
      assert.equal(exported.isError, undefined, text(exported));
      const nb = JSON.parse(readFileSync(out, "utf8")) as {
        cells: { source: string | string[]; outputs: { text: string | string[] }[] }[];
      };
      const joined = (s: string | string[]) => (Array.isArray(s) ? s.join("") : s);
      const tail = nb.cells.slice(-n);
      assert.deepEqual(
        tail.map((c) => joined(c.source)),
        codes,
      );
      assert.deepEqual(
        tail.map((c) => c.outputs.map((o) => joined(o.text))),
        codes.map((_, i) => [`${i}\n`]),
      );
    });

    test("per-call mode pipelines too, and a call queued behind a pipelined one never runs between its cells", async () => {
      const perCall = await call({
        cells: [{ code: "print('a')" }, { code: "print('b')" }, { code: "print('c')" }],
        mode: "per-call",
      });
      assert.equal(text(perCall), "[1/3]\na\n[2/3]\nb\n[3/3]\nc");
      assert.deepEqual(sentAhead, ["print('b')", "print('c')"]);

      await call({ cells: [{ code: "order = []" }] });
      const n = 40;
      const first = call({
        cells: Array.from({ length: n }, (_, i) => ({ code: `order.append(${i})` })),
        timeout: 120,
      });
      const second = call({ cells: [{ code: "order.append('other')" }], timeout: 120 });
      await Promise.all([first, second]);
      const r = await call({ cells: [{ code: "print(order)" }] });
      const order = JSON.parse(text(r).replace(/'/g, '"')) as (number | string)[];
      const at = order.indexOf("other");
      assert.deepEqual(
        order.filter((x) => x !== "other"),
        Array.from({ length: n }, (_, i) => i),
      );
      assert.ok(at === 0 || at === n, `the other call ran between two cells: ${order.join(",")}`);
    });

    test("the next request reaches the kernel before it publishes the previous cell's idle", async (t) => {
      if (!(await hasHandlerHook())) return t.skip(NO_HANDLER_HOOK);
      // Cell 1 replaces, for its own request only, ipykernel 6's step between sending the reply and
      // publishing idle (dispatch_shell's post_handler_hook): it pushes the reply out and waits there
      // for the next request to arrive on the shell socket. Sent at the reply, it comes; sent after
      // the idle, it cannot (the idle is not published until the wait ends), and the wait times out.
      const seen = fresh("seen");
      const hold = afterReply([`    open(${py(seen)}, 'w').write('queued' if queued else 'not queued')`]);
      const r = await call({ cells: [{ code: hold }, { code: "print('next')" }], timeout: 60 });
      assert.equal(r.isError, undefined, text(r));
      assert.equal(readFileSync(seen, "utf8"), "queued");
      assert.deepEqual(sentAhead, ["print('next')"]);
      assert.match(text(r), /\[2\/2\]\nnext$/);
    });

    test("stdin in a cell sent ahead: refused as in any cell, in that cell, and the EOFError stops the call", async () => {
      const notice =
        "[stdin] Kernel requested input. Interactive stdin is not supported; provide input programmatically.";
      const asks = "x = input('name? ')\nprint(repr(x))";
      const twice = "y = input('a? ')\nz = input('b? ')";
      const r = await call({
        cells: [{ code: "pass" }, { code: asks }, { code: twice }, { code: "print(1)" }],
      });
      assert.deepEqual(sentAhead, [asks, twice]);
      assert.deepEqual(
        r.details.cells.map((c) => [c.status, c.stdinRequested]),
        [
          ["ok", undefined],
          ["ok", true],
          ["error", true],
          ["skipped", undefined],
        ],
      );
      const t = text(r);
      assert.ok(t.startsWith(`[1/4]\n(ok)\n[2/4]\n${notice}\n''\n[3/4]\n${notice}\n`), t);
      assert.match(t, /\nEOFError: stdin is not available in this kernel: input\(\) cannot be answered\./);
      assert.match(t, /\nCell 4 did not run\.$/);
    });

    test("a failing middle cell: nothing is sent after it, the kernel does not run the rest, the text names them", async () => {
      const marker = fresh("ran");
      const r = await call({
        cells: [
          { code: "before_fail = 1" },
          { code: "1/0" },
          { code: `after_fail = 1\nopen(${py(marker)}, 'w').close()` },
          { code: "print('never')" },
        ],
      });
      assert.deepEqual(sentAhead, ["1/0"]);
      assert.deepEqual(statuses(r), ["ok", "error", "skipped", "skipped"]);
      assert.match(
        text(r),
        /\nCell 2 failed: ZeroDivisionError: division by zero\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCells 3-4 did not run\.$/,
      );
      assert.equal(existsSync(marker), false);
      const state = await call({ cells: [{ code: "print('after_fail' in globals(), before_fail)" }] });
      assert.equal(text(state), "False 1");
    });

    /**
     * Cell 1's code, then, after its reply, a hold before its idle (ipykernel's post_handler_hook,
     * for this request only): the next request is waited for on the shell socket, `held` is
     * written, and the hold lasts until an interrupt reaches the kernel — while the cell sent ahead
     * is queued behind it, not running.
     */
    const holdUntilInterrupt = (held: string) =>
      afterReply(
        [
          `    open(${py(held)}, 'w').write('queued' if queued else 'not queued')`,
          "    try:",
          "        for _ in range(600): time.sleep(0.05)",
          "    except KeyboardInterrupt:",
          `        open(${py(held)}, 'a').write(' interrupted')`,
        ],
        "last",
        ["queued_kept = 1"],
      );

    test("an interrupt while the cell sent ahead is queued: the kernel does not pass it on, the grace restarts it, nothing after runs", async (t) => {
      if (!(await hasHandlerHook())) return t.skip(NO_HANDLER_HOOK);
      const held = fresh("held");
      const started = fresh("started");
      const marker = fresh("ran");
      const long = `import time\nopen(${py(started)}, 'w').close()\nwhile True: time.sleep(0.05)`;
      const abort = new AbortController();
      const running = call(
        {
          cells: [
            { code: holdUntilInterrupt(held) },
            { code: long },
            { code: `open(${py(marker)}, 'w').close()` },
          ],
        },
        abort.signal,
      );
      await waitFor("cell 2 queued behind cell 1", () => existsSync(held));
      abort.abort();
      const r = await running;
      assert.deepEqual(sentAhead, [long]);
      assert.equal(readFileSync(held, "utf8"), "queued interrupted");
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      // The interrupt reached the kernel before cell 2 began, so cell 2 began after it and went on.
      assert.equal(existsSync(started), true);
      assert.match(
        text(r),
        /\nCell 2 was interrupted: the call was cancelled; it did not stop, so the kernel was restarted and its state is lost\.\nCell 3 did not run\.$/,
      );
      assert.equal(existsSync(marker), false);
    });

    test("a cancel while the cell sent ahead waits where the kernel ignores SIGINT: the interrupt waits for that cell to begin, and the state is kept", async (t) => {
      if (!(await hasHandlerHook())) return t.skip(NO_HANDLER_HOOK);
      await call({ cells: [{ code: "pass" }] }); // takes any note of an earlier test's restart
      sentAhead.length = 0;
      const held = fresh("held");
      const cancelled = fresh("cancelled");
      const marker = fresh("ran");
      // Cell 1, after its reply: ipykernel's own post_handler_hook first (SIGINT ignored again, as
      // between any two requests), then a wait there until the next request is queued and the call
      // was cancelled. An interrupt sent at the cancel would be ignored and cell 2 would run on.
      const hold = afterReply(
        [
          `    open(${py(held)}, 'w').close()`,
          "    for _ in range(400):",
          `        if os.path.exists(${py(cancelled)}): break`,
          "        time.sleep(0.05)",
        ],
        "first",
        ["kept = 41"],
      );
      const long = "import time\nwhile True: time.sleep(0.05)";
      const abort = new AbortController();
      const running = call(
        { cells: [{ code: hold }, { code: long }, { code: `open(${py(marker)}, 'w').close()` }] },
        abort.signal,
      );
      await waitFor("cell 2 queued behind cell 1", () => existsSync(held));
      abort.abort();
      writeFileSync(cancelled, "");
      const r = await running;
      assert.deepEqual(sentAhead, [long]);
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      // The interrupt went at cell 2's execute_input: it stopped cell 2 at its start or in its loop.
      assert.match(
        text(r),
        /\nCell 2 was interrupted: the call was cancelled; the kernel keeps its state\.\n[\s\S]*Cell 3 did not run\.$/,
      );
      assert.doesNotMatch(text(r), /restarted|state is lost/);
      assert.equal(existsSync(marker), false);
      const after = await call({ cells: [{ code: "print(kept + 1)" }] });
      assert.equal(text(after), "42", "the kernel kept its state");
    });

    test("a timeout while the cell sent ahead is queued: the same, and the text says timed out", async (t) => {
      if (!(await hasHandlerHook())) return t.skip(NO_HANDLER_HOOK);
      await call({ cells: [{ code: "pass" }] }); // the kernel started: the 3 s are the cells'
      sentAhead.length = 0;
      const held = fresh("held");
      const marker = fresh("ran");
      const r = await call({
        cells: [
          { code: holdUntilInterrupt(held) },
          { code: "import time\nwhile True: time.sleep(0.05)" },
          { code: `open(${py(marker)}, 'w').close()` },
        ],
        timeout: 3,
      });
      assert.equal(readFileSync(held, "utf8"), "queued interrupted");
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      assert.match(
        text(r),
        /\nCell 2 timed out: the call's timeout of 3 seconds ran out and the cell was interrupted; it did not stop, so the kernel was restarted and its state is lost\.[^\n]*\nCell 3 did not run\.$/,
      );
      assert.equal(existsSync(marker), false);
    });

    test("a cell sent ahead that ends the kernel: its own death, not run again, nothing after it runs", async () => {
      const r = await call({
        cells: [{ code: "x = 1" }, { code: "import os; os._exit(1)" }, { code: "print(3)" }],
      });
      assert.deepEqual(sentAhead, ["import os; os._exit(1)"]);
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      assert.match(
        text(r),
        /\nThe kernel died while cell 2 ran \([^\n]*\)\. It was restarted: all state is gone \(variables, imports\), and cell 2 was not run again; its effects up to the crash may have happened\.\nCell 3 did not run\.$/,
      );
      const again = await call({ cells: [{ code: "print('x' in globals())" }] });
      assert.match(
        text(again),
        /^Note: This session's kernel died at [^\n]* while cell 2 of a python call ran [^\n]*\nFalse$/,
      );
    });

    test("a kernel that dies while the cell sent ahead is queued: that cell counts as sent (not run again), as any sent request", async (t) => {
      if (!(await hasHandlerHook())) return t.skip(NO_HANDLER_HOOK);
      const marker = fresh("ran");
      // Cell 1 replies, waits for cell 2's request to arrive, and then ends the kernel before its idle.
      const die = afterReply(["    os._exit(1)"], "never");
      const second = `open(${py(marker)}, 'w').close()`;
      const r = await call({ cells: [{ code: die }, { code: second }, { code: "print(3)" }] });
      assert.deepEqual(sentAhead, [second]);
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      assert.match(
        text(r),
        /\nThe kernel died while cell 2 ran \([^\n]*\)\. It was restarted: all state is gone \(variables, imports\), and cell 2 was not run again; its effects up to the crash may have happened\.\nCell 3 did not run\.$/,
      );
      assert.equal(existsSync(marker), false, "cell 2 never began; it was not sent again either");
    });

    test("a timeout stops the cell sent ahead: it is interrupted, nothing after it runs", async () => {
      await call({ cells: [{ code: "pass" }] }); // the kernel started: the 3 s are the cells'
      sentAhead.length = 0;
      const marker = fresh("ran");
      const r = await call({
        cells: [
          { code: "kept2 = 2" },
          { code: "import time\nwhile True: time.sleep(0.05)" },
          { code: `open(${py(marker)}, 'w').close()` },
        ],
        timeout: 3,
      });
      assert.deepEqual(sentAhead, ["import time\nwhile True: time.sleep(0.05)"]);
      assert.deepEqual(statuses(r), ["ok", "aborted", "skipped"]);
      assert.match(
        text(r),
        /\nCell 2 timed out: the call's timeout of 3 seconds ran out and the cell was interrupted; the kernel keeps its state\. Pass a larger timeout for long work\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\.$/,
      );
      assert.equal(existsSync(marker), false);
    });
  });

describe("the kernels tool's interrupt of a pipelined call", () => {
  const boxes: { dispose(): Promise<void> }[] = [];
  after(async () => {
    await Promise.all(boxes.map((b) => b.dispose()));
  });
  const long = (started: string) =>
    `import time\nopen(${py(started)}, 'w').close()\nwhile True: time.sleep(0.05)`;

  test("of a background run and of a plain call: the cell sent ahead stops, nothing after it runs, the state is kept", async () => {
    const box = createToolbox({
      settings: testSettings(),
      cwd,
      runtime: { stateRoot: join(root, "state-kernels") },
      waitSeconds: 1,
    });
    boxes.push(box);
    const tool = (name: string) => (params: unknown) =>
      box.tools.find((t) => t.name === name)!.execute("t", params as never) as Promise<
        ToolResult<PythonToolDetails>
      >;
    const [python, kernels, runs] = [tool("python"), tool("kernels"), tool("runs")];
    // A background run: the kernels tool interrupts it by its run id (the run's signal).
    const started = fresh("started");
    const marker = fresh("ran");
    const first = await python({
      cells: [{ code: "kept = 1" }, { code: long(started) }, { code: `open(${py(marker)}, 'w').close()` }],
      wait: 0.5,
    });
    const id = /run (r\d+)/.exec(text(first))?.[1];
    assert.ok(id, text(first));
    await waitFor("cell 2 to run", () => existsSync(started));
    await kernels({ action: "interrupt", run_id: id });
    const done = await runs({ run_id: id });
    assert.match(
      text(done),
      /\nCell 2 was interrupted: the call was cancelled \(interrupted through the kernels tool\); the kernel keeps its state\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\.$/,
    );
    assert.equal(existsSync(marker), false);
    assert.deepEqual(sentAhead, [long(started)]);

    // A call that is no run (a python tool without the registry): the interrupt goes to the kernel.
    const runtime = createRuntime({ settings: testSettings(), stateRoot: join(root, "state-plain") });
    boxes.push(runtime);
    const plain = createPythonTool({ cwd, runtime });
    const kernelsTool = createKernelsTool({ cwd, runtime, runs: new RunRegistry() });
    const started2 = fresh("started");
    const marker2 = fresh("ran");
    const call = plain.execute("t", {
      cells: [{ code: "kept = 2" }, { code: long(started2) }, { code: `open(${py(marker2)}, 'w').close()` }],
      timeout: 600,
    });
    await waitFor("cell 2 to run", () => existsSync(started2));
    await kernelsTool.execute("t", { action: "interrupt", session_id: "default" });
    const r = await call;
    assert.match(
      text(r),
      /\nCell 2 failed: KeyboardInterrupt\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\.$/,
    );
    assert.equal(existsSync(marker2), false);
    assert.deepEqual(sentAhead, [long(started), long(started2)]);
    assert.equal(text(await plain.execute("t", { cells: [{ code: "print(kept)" }] })), "2");
  });
});
