/**
 * What a run saves when a real kernel splits its stream writes, and when it goes idle without an
 * execute_reply (docs/output.md "Saved stream text", docs/cli.md): the saved file, the notebook tool's
 * text and `nbagent run`'s output.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ConnectedKernel, JupyterMessage } from "../../src/kernel/index.js";
import { loadNotebook } from "../../src/notebook/index.js";
import { DisplayRegistry } from "../../src/runtime/collector.js";
import { runNotebookCells } from "../../src/runtime/notebook-run.js";
import type { Toolbox } from "../../src/tools/index.js";
import { backendCases } from "../backends.js";
import {
  type Json,
  nbagent,
  oneShotToolbox,
  outputTexts,
  perTestDirs,
  readNb,
  resultText,
  validate,
  writeNb,
} from "./helpers.js";

/** Three writes, each flushed on its own: ipykernel sends three stream messages. */
const SPLIT_WRITES =
  "import sys\n" +
  "_ = sys.stdout.write('hello\\r'); sys.stdout.flush()\n" +
  "_ = sys.stdout.write('\\r'); sys.stdout.flush()\n" +
  "_ = sys.stdout.write('\\n'); sys.stdout.flush()";
/** The debugger asks for input after the error; with no stdin ipykernel goes idle without replying. */
const PDB = "%pdb on\n1/0";
/**
 * Makes the kernel's next execute_request handler fail once: it goes idle without replying (the
 * notebook tool answers stdin, so %pdb there gets an end of input and the kernel does reply).
 */
const FAIL_NEXT_REQUEST =
  "_k = get_ipython().kernel\n" +
  "_real = _k.shell_handlers['execute_request']\n" +
  "def _fail_once(*args, **kwargs):\n" +
  "    _k.shell_handlers['execute_request'] = _real\n" +
  "    raise RuntimeError('the request handler failed (test)')\n" +
  "_k.shell_handlers['execute_request'] = _fail_once";

const timing = (nb: Json, i: number) => nb.cells[i].metadata.execution as Record<string, string>;

describe("a real kernel's split writes and missing replies, as saved", { concurrency: true }, () => {
  const dir = perTestDirs();
  const boxes: Toolbox[] = [];
  after(async () => {
    await Promise.all(boxes.map((b) => b.dispose()));
  });

  for (const backend of backendCases().slice(0, 1))
    describe(backend.name, () => {
      let kernel: ConnectedKernel;
      before(async () => {
        kernel = await (await backend.create()).startKernel({ env: process.env as Record<string, string> });
      });
      after(() => backend.dispose());

      test("three stream messages hello\\r, \\r, \\n are saved as hello\\n; no reply, no reply time", async () => {
        const path = await writeNb(join(await dir(), "split.ipynb"), [
          ["code", SPLIT_WRITES],
          ["code", PDB],
          ["code", "print('after')"],
        ]);
        const streams: string[][] = [];
        const r = await runNotebookCells({
          loaded: await loadNotebook(path),
          indices: [0, 1, 2],
          registry: new DisplayRegistry(),
          allowErrors: true,
          recordTiming: true,
          execute: (code, options) => {
            const seen: string[] = [];
            streams.push(seen);
            return kernel.execute(code, {
              ...options,
              stdinDisabled: true,
              timeoutMs: 60_000,
              onIOPub: (m: JupyterMessage) => {
                if (m.header.msg_type === "stream") seen.push(String((m.content as { text: string }).text));
                options.onIOPub?.(m);
              },
            });
          },
        });
        // The kernel really split the text: three messages, not one.
        assert.deepEqual(streams[0], ["hello\r", "\r", "\n"]);
        const nb = await readNb(path);
        assert.deepEqual(outputTexts(nb)[0], ["hello\n"]);
        // %pdb on: the kernel went idle without an execute_reply; no reply time is recorded for it.
        assert.deepEqual(
          r.cells[1].result?.notices.map((n) => n.kind),
          ["no-reply"],
        );
        assert.equal(r.cells[1].result?.replyDate, undefined);
        assert.equal("shell.execute_reply" in timing(nb, 1), false, JSON.stringify(timing(nb, 1)));
        assert.equal(typeof timing(nb, 1)["iopub.status.idle"], "string");
        // Cells that were replied to keep nbclient's timing key, the reply's own date.
        assert.equal(timing(nb, 0)["shell.execute_reply"], r.cells[0].result?.replyDate);
        assert.equal(typeof timing(nb, 2)["shell.execute_reply"], "string");
        assert.equal(await validate(path), "ok");
      });
    });

  test("the notebook tool saves and shows hello; its text says the kernel went idle without replying", async () => {
    const cwd = await dir();
    await writeNb(join(cwd, "tool.ipynb"), [
      ["code", SPLIT_WRITES],
      ["code", FAIL_NEXT_REQUEST],
      ["code", "print('never runs')"],
    ]);
    const { box, tool } = oneShotToolbox(cwd);
    boxes.push(box);
    const nb = tool("notebook");
    const text = resultText(await nb({ action: "run", notebook_path: "tool.ipynb", all: true }));
    assert.match(text, /hello/, text);
    assert.match(text, /the kernel went idle without replying to it/, text);
    const saved = await readNb(join(cwd, "tool.ipynb"));
    assert.deepEqual(outputTexts(saved), [["hello\n"], [], []]);
  });

  test("nbagent call notebook run: the text and the file hold hello", async () => {
    const cwd = await dir();
    const path = await writeNb(join(cwd, "call.ipynb"), [["code", SPLIT_WRITES]]);
    const r = await nbagent(
      ["call", "notebook", JSON.stringify({ action: "run", notebook_path: "call.ipynb", all: true })],
      { cwd },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^hello$/m, r.stdout);
    assert.deepEqual(outputTexts(await readNb(path)), [["hello\n"]]);
  });

  test("nbagent run saves hello and says which cell's kernel went idle without replying", async () => {
    const path = await writeNb(join(await dir(), "cli.ipynb"), [
      ["code", SPLIT_WRITES],
      ["code", PDB],
      ["code", "print('after')"],
    ]);
    const r = await nbagent(["run", "--allow-errors", path]);
    assert.equal(r.code, 0, r.stderr);
    const nb = await readNb(path);
    const texts = outputTexts(nb);
    assert.deepEqual(texts[0], ["hello\n"]);
    assert.deepEqual(texts[1].slice(0, 2), [
      "Automatic pdb calling has been turned ON\n",
      "!ZeroDivisionError",
    ]);
    assert.deepEqual(texts[2], ["after\n"]);
    assert.equal("shell.execute_reply" in timing(nb, 1), false, JSON.stringify(timing(nb, 1)));
    assert.equal(typeof timing(nb, 0)["shell.execute_reply"], "string");
    // The cell's progress line and the summary both say it.
    assert.match(
      r.stderr,
      /cell 1 error [\d.]+s: StdinNotImplementedError: [^\n]*; the kernel went idle without replying to it \(its request handler failed; the kernel's log says why\)\n/,
    );
    assert.match(r.stderr, /1 failed; cell 1 \(id c1\): the kernel went idle without replying to it/);
  });

  test("nbagent run: a cell that stops the notebook says its kernel went idle without replying", async () => {
    const path = await writeNb(join(await dir(), "stop.ipynb"), [
      ["code", PDB],
      ["code", "print('never')"],
    ]);
    const r = await nbagent(["run", path]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /stop\.ipynb: cell 0 \(id c0\) failed: it raised an error and the kernel went idle without replying to it \(its request handler failed; the kernel's log says why\); the notebook stopped there\./,
    );
    assert.deepEqual(outputTexts(await readNb(path))[1], []);
  });
});
