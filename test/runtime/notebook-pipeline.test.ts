/**
 * Pipelined cells on real kernels (docs/runs.md, "Pipelined cells"; src/runtime/notebook-run.ts):
 * each cell after the first is sent at the reply of the one before, when that reply lets the run go
 * on — and only then, so a failed cell (unless allowed), a timed-out or interrupted one and a dead
 * kernel still stop the run before anything after them runs, and each output lands in its own cell.
 * Order and outcomes are asserted, never times.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ConnectedKernel, SentAhead } from "../../src/kernel/index.js";
import { loadNotebook } from "../../src/notebook/index.js";
import { DisplayRegistry } from "../../src/runtime/collector.js";
import { type NotebookRunOptions, runNotebookCells } from "../../src/runtime/notebook-run.js";
import { backendCases } from "../backends.js";
import { outputTexts, perTestDirs, readNb, waitFor, writeNb } from "../run/helpers.js";

type Cells = Parameters<typeof writeNb>[1];

// One kernel per backend, one run at a time on it (as a session's lock or `nbagent run` gives).
describe("pipelined notebook runs", () => {
  const dir = perTestDirs();

  for (const backend of backendCases())
    describe(backend.name, () => {
      let kernel: ConnectedKernel;
      before(async () => {
        kernel = await (await backend.create()).startKernel({ env: process.env as Record<string, string> });
      });
      after(() => backend.dispose());

      /** Runs every cell of a new notebook; says which codes were sent ahead and which executions took one over. */
      async function run(cells: Cells, extra: Partial<NotebookRunOptions> = {}) {
        const path = await writeNb(join(await dir(), "nb.ipynb"), cells);
        const sentAhead: string[] = [];
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
          sendAhead: (code): SentAhead | undefined => {
            const sent = kernel.sendAhead(code, { stdinDisabled: true });
            if (sent) sentAhead.push(code);
            return sent;
          },
          ...extra,
        });
        return { path, result, sentAhead, takenOver, statuses: result.cells.map((c) => c.status) };
      }

      test("quick cells: each after the first is sent at the reply before it, each output in its own cell", async () => {
        const cells: Cells = Array.from({ length: 30 }, (_, i) => ["code", `print(${i})`]);
        const r = await run(cells);
        const codes = cells.slice(1).map((c) => c[1]);
        assert.deepEqual(r.sentAhead, codes);
        assert.deepEqual(r.takenOver, codes);
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
        assert.deepEqual(r.sentAhead, ["1/0"]);
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
        assert.deepEqual(tagged.sentAhead, ["raise ValueError('expected')"]);
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
        assert.equal(existsSync(marker), false);
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
        await kernel.execute(`import os; os.environ['NB_PATH'] = ${JSON.stringify(path)}`, { silent: true });
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
        const own = await (await backend.create()).startKernel({
          env: process.env as Record<string, string>,
        });
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
            sendAhead: (code) => own.sendAhead(code, { stdinDisabled: true }),
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
