/**
 * Pipelined cells on real kernels (docs/runs.md, "Pipelined cells"; src/runtime/notebook-run.ts):
 * each cell after the first is sent at the reply of the one before, when that reply lets the run go
 * on — and, on a kernel with nbagent's guard (the init code `nbagent run` and sessions run), the cell
 * after that one too, which the kernel runs only after a quick `ok` — so a failed cell (unless
 * allowed), a timed-out or interrupted one and a dead kernel still stop the run before anything
 * after them runs, and each output lands in its own cell. Each case runs on a bare kernel and on one
 * with the guard. Order and outcomes are asserted, never times.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ConnectedKernel, SentAhead } from "../../src/kernel/index.js";
import { loadNotebook } from "../../src/notebook/index.js";
import { DisplayRegistry } from "../../src/runtime/collector.js";
import { streamGuardScript } from "../../src/runtime/init.js";
import { type NotebookRunOptions, runNotebookCells } from "../../src/runtime/notebook-run.js";
import { backendCases } from "../backends.js";
import { outputTexts, perTestDirs, readNb, waitFor, writeNb } from "../run/helpers.js";

type Cells = Parameters<typeof writeNb>[1];

/** The codes as sent, each run of the same code sent twice in a row counted once, and those sent again. */
function resent(sent: string[]): { once: string[]; twice: string[] } {
  const once: string[] = [];
  const twice: string[] = [];
  for (const code of sent)
    if (once.at(-1) === code) twice.push(code);
    else once.push(code);
  return { once, twice };
}

// One kernel per backend, one run at a time on it (as a session's lock or `nbagent run` gives).
describe("pipelined notebook runs", () => {
  const dir = perTestDirs();

  for (const backend of backendCases())
    for (const guarded of [false, true])
      describe(`${backend.name}, ${guarded ? "a kernel with nbagent's guard" : "a bare kernel"}`, () => {
        let kernel: ConnectedKernel;
        /** Starts a kernel; with the guard when this case has it (as `nbagent run` sets its kernels up). */
        async function start(): Promise<ConnectedKernel> {
          const k = await (await backend.create()).startKernel({
            env: process.env as Record<string, string>,
          });
          if (guarded)
            await k.execute(streamGuardScript(), { silent: true, storeHistory: false, keepText: false });
          return k;
        }
        before(async () => {
          kernel = await start();
        });
        after(() => backend.dispose());

        /**
         * Runs every cell of a new notebook; says which codes were sent ahead (and which of them to run
         * only after the request before them) and which executions took one over.
         */
        async function run(cells: Cells, extra: Partial<NotebookRunOptions> = {}, at?: string) {
          const path = await writeNb(at ?? join(await dir(), "nb.ipynb"), cells);
          const sentAhead: string[] = [];
          const sentAfter: string[] = [];
          const takenOver: string[] = [];
          const loaded = await loadNotebook(path);
          const result = await runNotebookCells({
            loaded,
            indices: loaded.notebook.cells.map((_, i) => i),
            registry: new DisplayRegistry(),
            saveEachCell: false,
            execute: (code, options) => {
              if (options.ahead) takenOver.push(code);
              return kernel.execute(code, { ...options, stdinDisabled: true });
            },
            sendAhead: (code, after): SentAhead | undefined => {
              const sent = kernel.sendAhead(code, { stdinDisabled: true, after });
              if (sent) sentAhead.push(code);
              if (sent && after) sentAfter.push(code);
              return sent;
            },
            ...extra,
          });
          return {
            path,
            result,
            sentAhead,
            sentAfter,
            takenOver,
            statuses: result.cells.map((c) => c.status),
          };
        }

        test("quick cells: each after the first is sent at the reply before it, each output in its own cell", async () => {
          const cells: Cells = Array.from({ length: 30 }, (_, i) => ["code", `print(${i})`]);
          const r = await run(cells);
          const codes = cells.slice(1).map((c) => c[1]);
          // A bare kernel: each cell sent once, at the reply before it. With the guard, a cell the
          // kernel dropped (the one before it took over 20 ms: a loaded machine) is sent once more,
          // straight after, unguarded: only a guarded request is ever sent again.
          assert.deepEqual(guarded ? resent(r.sentAhead).once : r.sentAhead, codes);
          for (const again of resent(r.sentAhead).twice) assert.ok(r.sentAfter.includes(again), again);
          assert.deepEqual(r.takenOver, codes);
          // With the guard each cell from the third on went behind the one before it; a bare kernel
          // is never sent a request it would run unguarded.
          assert.deepEqual(r.sentAfter, guarded ? codes.slice(1) : []);
          assert.deepEqual(r.statuses, Array(30).fill("ok"));
          const nb = await readNb(r.path);
          assert.deepEqual(
            outputTexts(nb),
            cells.map((_, i) => [`${i}\n`]),
          );
          const counts = nb.cells.map((c: { execution_count: number }) => c.execution_count);
          assert.deepEqual(
            counts,
            counts.map((_: number, i: number) => counts[0] + i),
          );
        });

        test("a failed cell: nothing is sent after it, the cells after it do not run", async () => {
          const marker = join(await dir(), "ran");
          const r = await run([
            ["code", "x = 0"],
            ["code", "1/0"],
            ["code", `open(${JSON.stringify(marker)}, "w").close()`],
          ]);
          assert.deepEqual(r.statuses, ["ok", "error", "not-run"]);
          // With the guard the third cell was in the kernel behind the error, which dropped it unrun.
          assert.deepEqual(r.sentAhead, guarded ? ["1/0", r.sentAhead[1]] : ["1/0"]);
          assert.deepEqual(r.sentAfter, guarded ? [`open(${JSON.stringify(marker)}, "w").close()`] : []);
          assert.equal(existsSync(marker), false);
        });

        test("raises-exception and allow_errors: the run goes on, and nothing is sent ahead at an error's reply", async () => {
          const tagged = await run([
            ["code", "x = 0"],
            ["code", "raise ValueError('expected')", ["raises-exception"]],
            ["code", "print('after')"],
          ]);
          assert.deepEqual(tagged.statuses, ["ok", "error", "ok"]);
          assert.equal(tagged.result.cells[1].expectedError, true);
          // Not after an error, even an allowed one (IRkernel dropped a request sent then: docs/runs.md).
          // With the guard the third cell went behind the error, was dropped by the kernel, and was
          // sent again at its turn: it ran once, after the error, and was not taken over.
          assert.deepEqual(
            tagged.sentAhead,
            guarded ? ["raise ValueError('expected')", "print('after')"] : ["raise ValueError('expected')"],
          );
          assert.deepEqual(tagged.takenOver, ["raise ValueError('expected')"]);
          assert.deepEqual(outputTexts(await readNb(tagged.path))[2], ["after\n"]);
          const counts = (await readNb(tagged.path)).cells.map(
            (c: { execution_count: number }) => c.execution_count,
          );
          assert.deepEqual(
            counts,
            [counts[0], counts[0] + 1, counts[0] + 2],
            "a dropped request takes no count",
          );
          const allowed = await run(
            [
              ["code", "1/0"],
              ["code", "print('after')"],
            ],
            { allowErrors: true },
          );
          assert.deepEqual(allowed.statuses, ["error", "ok"]);
          assert.deepEqual(allowed.sentAhead, []);
          assert.deepEqual(outputTexts(await readNb(allowed.path))[1], ["after\n"]);
        });

        test("a timed-out cell and an interrupted one: the cells after them do not run", async () => {
          const d = await dir();
          const marker = join(d, "ran");
          const timedOut = await run(
            [
              ["code", "x = 0"],
              ["code", "import time\nwhile True: time.sleep(0.05)"],
              ["code", `open(${JSON.stringify(marker)}, "w").close()`],
            ],
            { cellTimeoutMs: 1500 },
          );
          assert.deepEqual(timedOut.statuses, ["ok", "aborted", "not-run"]);
          assert.equal(timedOut.result.cells[1].result?.timedOut, true);
          const markerCode = `open(${JSON.stringify(marker)}, "w").close()`;
          // With the guard the marker's cell waited in the kernel behind the long one: dropped unrun.
          assert.deepEqual(timedOut.sentAfter, guarded ? [markerCode] : []);
          assert.equal(existsSync(marker), false);

          const started = join(d, "started");
          const abort = new AbortController();
          const running = run(
            [
              ["code", "x = 0"],
              [
                "code",
                `import time\nopen(${JSON.stringify(started)}, "w").close()\nwhile True: time.sleep(0.05)`,
              ],
              ["code", `open(${JSON.stringify(marker)}, "w").close()`],
            ],
            { signal: abort.signal },
          );
          await waitFor("the long cell to start", () => existsSync(started));
          abort.abort();
          const interrupted = await running;
          assert.deepEqual(interrupted.statuses, ["ok", "aborted", "not-run"]);
          assert.equal(interrupted.result.cells[1].result?.cancelled, true);
          assert.deepEqual(interrupted.sentAfter, guarded ? [markerCode] : []);
          assert.equal(existsSync(marker), false);
        });

        test("a cell edited while a slow cell before it runs: its request sent behind was dropped, its new source runs", async () => {
          // The second cell rewrites the third and then takes longer than the guard lets a request
          // behind it run: the third's request, sent at the first cell's reply with its old source
          // (guarded kernel), is dropped, and the run reads the file again at its turn.
          const rewrite =
            "import json, os, time\np = os.environ['NB_PATH']\nnb = json.load(open(p))\n" +
            "nb['cells'][2]['source'] = \"print('new')\"\njson.dump(nb, open(p + '.tmp', 'w'))\n" +
            "os.replace(p + '.tmp', p)\ntime.sleep(0.2)";
          const path = join(await dir(), "nb.ipynb");
          await kernel.execute(`import os; os.environ['NB_PATH'] = ${JSON.stringify(path)}`, {
            silent: true,
          });
          const r = await run(
            [
              ["code", "x = 0"],
              ["code", rewrite],
              ["code", "print('old')"],
            ],
            {},
            path,
          );
          assert.deepEqual(r.statuses, ["ok", "ok", "ok"]);
          assert.deepEqual(r.sentAhead, guarded ? [rewrite, "print('old')"] : [rewrite]);
          assert.deepEqual(r.takenOver, [rewrite]);
          assert.equal(r.result.cells[2].editedBeforeRun, true);
          assert.equal(r.result.cells[2].editedWhileRunning, undefined);
          assert.deepEqual(outputTexts(await readNb(r.path))[2], ["new\n"]);
        });

        test("the guard itself: a request naming one the kernel did not just end ok and quickly is answered aborted, unrun", async (t) => {
          if (!guarded) return t.skip("a bare kernel is never sent such a request");
          const stranger = { code: "", msgId: "not-the-last-request", release() {} };
          const dropped = await kernel.execute("guard_ran = True", {
            ahead: kernel.sendAhead("guard_ran = True", { after: stranger }),
          });
          assert.equal(dropped.status, "aborted");
          assert.equal(dropped.executionCount, null, "no execution count taken");
          // After a slow cell (longer than AHEAD_QUICK_MS) the one behind it is dropped as well.
          const heard: unknown[] = [];
          await kernel.execute("import time; time.sleep(0.1)", {
            onReply: (reply) => {
              heard.push(reply.next);
              return false;
            },
          });
          const slow = kernel.sendAhead("import time; time.sleep(0.1)");
          const behind = kernel.sendAhead("guard_ran = True", { after: slow });
          const r1 = await kernel.execute("", { ahead: slow });
          const r2 = await kernel.execute("", { ahead: behind });
          assert.equal(r1.status, "ok");
          assert.equal(r2.status, "aborted");
          assert.deepEqual(
            heard,
            ["abort"],
            "the slow cell's reply said the request behind it would not run",
          );
          const check = await kernel.execute("print('guard_ran' in dir())");
          assert.equal(check.text, "False\n");
        });

        test("another client's request between a cell and the one sent behind it: the kernel drops that one, and it runs at its turn", async (t) => {
          if (!guarded) return t.skip("a bare kernel is never sent such a request");
          const path = await writeNb(join(await dir(), "nb.ipynb"), [
            ["code", "x = 0"],
            ["code", "x = 1"],
            ["code", "print('third', x)"],
          ]);
          const loaded = await loadNotebook(path);
          const strays: { dispose(): void }[] = [];
          const sent: string[] = [];
          const result = await runNotebookCells({
            loaded,
            indices: [0, 1, 2],
            registry: new DisplayRegistry(),
            execute: (code, options) => kernel.execute(code, { ...options, stdinDisabled: true }),
            sendAhead: (code, after) => {
              // As a second client of a shared kernel would: a request of its own lands first.
              if (after)
                strays.push(
                  kernel.client.future(
                    "shell",
                    kernel.client.factory.executeRequest("stray = 1", { stopOnError: false }),
                  ),
                );
              sent.push(code);
              return kernel.sendAhead(code, { stdinDisabled: true, after });
            },
          });
          for (const f of strays) f.dispose();
          // (Under load x = 1 may take over 20 ms: the third is then dropped at once and sent again.)
          assert.deepEqual(resent(sent).once, ["x = 1", "print('third', x)"]);
          assert.deepEqual(
            result.cells.map((c) => c.status),
            ["ok", "ok", "ok"],
          );
          assert.deepEqual(outputTexts(await readNb(path))[2], ["third 1\n"]);
        });

        test("a cell that rewrites the notebook: the cell after it is found in the new file, its new source runs", async () => {
          // The write lands before this cell's reply; the check at the reply sees it at once.
          const rewrite =
            "import json, sys\np = __import__('os').environ['NB_PATH']\nnb = json.load(open(p))\n" +
            "nb['cells'][1]['source'] = \"print('new')\"\njson.dump(nb, open(p + '.tmp', 'w'))\n" +
            "__import__('os').replace(p + '.tmp', p)";
          const path = await writeNb(join(await dir(), "rewrite.ipynb"), [
            ["code", rewrite],
            ["code", "print('old')"],
          ]);
          await kernel.execute(`import os; os.environ['NB_PATH'] = ${JSON.stringify(path)}`, {
            silent: true,
          });
          const loaded = await loadNotebook(path);
          const sent: string[] = [];
          const result = await runNotebookCells({
            loaded,
            indices: [0, 1],
            registry: new DisplayRegistry(),
            execute: (code, options) => kernel.execute(code, { ...options, stdinDisabled: true }),
            sendAhead: (code) => {
              sent.push(code);
              return kernel.sendAhead(code, { stdinDisabled: true });
            },
          });
          assert.deepEqual(sent, [], "the changed file is read again before the next cell goes");
          assert.deepEqual(
            result.cells.map((c) => c.status),
            ["ok", "ok"],
          );
          assert.equal(result.cells[1].editedBeforeRun, true);
          assert.deepEqual(outputTexts(await readNb(path))[1], ["new\n"]);
        });

        test("a cell that ends the kernel right after a quick cell: the death is its own", async () => {
          const own = await start();
          try {
            const path = await writeNb(join(await dir(), "dies.ipynb"), [
              ["code", "x = 1"],
              ["code", "import os; os._exit(1)"],
              ["code", "print('never')"],
            ]);
            const loaded = await loadNotebook(path);
            const result = await runNotebookCells({
              loaded,
              indices: [0, 1, 2],
              registry: new DisplayRegistry(),
              execute: (code, options) => own.execute(code, { ...options, stdinDisabled: true }),
              sendAhead: (code, after) => own.sendAhead(code, { stdinDisabled: true, after }),
            });
            assert.deepEqual(
              result.cells.map((c) => c.status),
              ["ok", "aborted", "not-run"],
            );
            assert.equal(result.cells[0].result?.kernelDied, false);
            assert.equal(result.cells[1].result?.kernelDied, true);
            assert.equal(result.stopReason, "the kernel died");
          } finally {
            await own.shutdown();
          }
        });
      });
});
