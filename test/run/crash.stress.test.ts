/**
 * Crash safety and concurrent writers: `nbagent run` SIGKILLed during a long cell leaves a valid file
 * holding the cells that completed, and no kernel behind; SIGTERM saves what completed; saves are
 * coalesced (at most one a second, docs/runs.md) and one made while a cell runs holds that cell as it
 * was before; a file changed underneath mid-run is merged (CLI and notebook tool): the other writer's
 * content stays and the run's outputs go into their cells.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLocalBackend } from "../../src/kernel/index.js";
import { loadNotebook } from "../../src/notebook/index.js";
import { DisplayRegistry } from "../../src/runtime/collector.js";
import { runNotebookCells } from "../../src/runtime/notebook-run.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";
import {
  type Json,
  marker,
  nbagent,
  pidsWithEnv,
  python,
  readNb,
  resultText,
  spawnNbagent,
  tempDir,
  validate,
  waitFor,
  writeNb,
} from "./helpers.js";

/** A cell that signals it started (file `ready`) and waits for the test's go-ahead (file `go`). */
const WAIT_FOR_GO =
  "import os, time\nopen('ready', 'w').close()\nwhile not os.path.exists('go'):\n    time.sleep(0.02)\nprint('went')";

/** Another writer (nbformat itself) saves the notebook with one more markdown cell. */
async function otherWriterSaves(path: string): Promise<Buffer> {
  await python([
    "-c",
    "import sys, nbformat\nfrom nbformat.v4 import new_markdown_cell\n" +
      "nb = nbformat.read(sys.argv[1], as_version=4)\n" +
      "nb.cells.append(new_markdown_cell('written by someone else'))\n" +
      "nbformat.write(nb, sys.argv[1])\n",
    path,
  ]);
  return readFile(path);
}

describe("crash safety and concurrent writers", { concurrency: true }, () => {
  let root: string;
  const backend = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer: false });
  before(async () => {
    root = await tempDir();
  });
  after(async () => {
    await backend.dispose();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("80 quick cells are saved at most once a second plus at the end, every output in the file", async () => {
    const dir = join(root, "coalesced");
    await mkdir(dir);
    const path = await writeNb(
      join(dir, "quick.ipynb"),
      Array.from({ length: 80 }, (_, i) => ["code", `print(${i})`] as ["code", string]),
    );
    const kernel = await backend.startKernel({ cwd: dir });
    try {
      const started = performance.now();
      const r = await runNotebookCells({
        loaded: await loadNotebook(path),
        indices: Array.from({ length: 80 }, (_, i) => i),
        registry: new DisplayRegistry(),
        execute: (code, options) => kernel.execute(code, options),
      });
      const elapsed = performance.now() - started;
      assert.equal(r.stopped, false);
      // One save per whole second that passed (the first may come after the first second), and the last.
      assert.ok(
        r.saves >= 1 && r.saves <= Math.floor(elapsed / 1000) + 1,
        `${r.saves} saves in ${elapsed} ms`,
      );
      const nb = await readNb(path);
      assert.deepEqual(
        nb.cells.map((c: Json) => [c.execution_count, [c.outputs[0].text].flat().join("")]),
        Array.from({ length: 80 }, (_, i) => [i + 1, `${i}\n`]),
      );
    } finally {
      await kernel.shutdown();
    }
  });

  it("a save while a cell runs writes the cells that completed and the running one as it was", async () => {
    const dir = join(root, "while-running");
    await mkdir(dir);
    const path = await writeNb(join(dir, "gated.ipynb"), [
      ["code", "print('one')"],
      ["code", `print('partial', flush=True)\n${WAIT_FOR_GO}`],
    ]);
    // The gated cell holds the outputs of an earlier run.
    await python([
      "-c",
      "import sys, nbformat\nfrom nbformat.v4 import new_output\n" +
        "nb = nbformat.read(sys.argv[1], as_version=4)\n" +
        "nb.cells[1].outputs = [new_output('stream', name='stdout', text='old\\n')]\n" +
        "nb.cells[1].execution_count = 7\nnbformat.write(nb, sys.argv[1])\n",
      path,
    ]);
    const kernel = await backend.startKernel({ cwd: dir });
    try {
      const running = runNotebookCells({
        loaded: await loadNotebook(path),
        indices: [0, 1],
        registry: new DisplayRegistry(),
        execute: (code, options) => kernel.execute(code, options),
      });
      await waitFor("the gated cell to start", () => existsSync(join(dir, "ready")), 45_000);
      // The first cell's outputs are saved by a timed save while the gated cell still runs.
      const saved = await waitFor(
        "the first cell's outputs in the file",
        async () => {
          const nb = await readNb(path);
          return nb.cells[0].outputs.length > 0 ? nb : undefined;
        },
        45_000,
      );
      assert.deepEqual(
        saved.cells.map((c: Json) => [
          c.execution_count,
          c.outputs.map((o: Json) => [o.text].flat().join("")),
        ]),
        [
          [1, ["one\n"]],
          [7, ["old\n"]],
        ],
      );
      await writeFile(join(dir, "go"), "");
      const r = await running;
      assert.equal(r.saves, 2, "the timed save and the last");
      const nb = await readNb(path);
      assert.deepEqual(
        nb.cells.map((c: Json) => [c.execution_count, c.outputs.map((o: Json) => [o.text].flat().join(""))]),
        [
          [1, ["one\n"]],
          [2, ["partial\nwent\n"]],
        ],
      );
      assert.equal(await validate(path), "ok");
    } finally {
      await kernel.shutdown();
    }
  });

  it("SIGTERM during a long cell: the cells that completed are saved at once; exit 143", async () => {
    const dir = join(root, "sigterm");
    await mkdir(dir);
    const path = await writeNb(join(dir, "term.ipynb"), [
      ["code", "print('one')"],
      ["code", "print('two')"],
      ["code", WAIT_FOR_GO],
    ]);
    const child = spawnNbagent(["run", "--quiet", path], { cwd: dir });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await waitFor("the waiting cell to start", () => existsSync(join(dir, "ready")), 45_000);
      child.kill("SIGTERM");
      assert.equal(await exited, 143, stderr);
      assert.equal(await validate(path), "ok");
      const nb = await readNb(path);
      assert.deepEqual(
        nb.cells.slice(0, 2).map((c: Json) => [c.execution_count, [c.outputs[0].text].flat().join("")]),
        [
          [1, "one\n"],
          [2, "two\n"],
        ],
      );
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });

  it("SIGKILL during a long cell: valid file with the completed cells, no kernel left", async () => {
    const dir = await tempDir();
    const path = await writeNb(join(dir, "long.ipynb"), [
      ["markdown", "# long run"],
      ["code", "print('one')"],
      ["code", "x = 2\nx * 21"],
      ["code", "from IPython.display import HTML\nHTML('<b>three</b>')"],
      ["code", "import time\ntime.sleep(60)"],
      ["code", "print('never')"],
    ]);
    const m = marker();
    const child = spawnNbagent(["run", "--quiet", path], { env: { [m.name]: m.value } });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    try {
      // Poll the file until the third quick cell's output is saved (each cell is saved when it ends).
      await waitFor(
        "the quick cells' outputs in the file",
        async () => {
          try {
            const nb = await readNb(path);
            return nb.cells[3].outputs.length > 0;
          } catch {
            return false;
          }
        },
        45_000,
      );
      const kernels = await pidsWithEnv(m.name, m.value);
      assert.ok(
        kernels.some((pid) => pid !== child.pid),
        `a kernel carries the marker (pids ${kernels}, host ${child.pid}) ${stderr}`,
      );
      child.kill("SIGKILL");
      await exited;

      assert.equal(await validate(path), "ok");
      const nb = await readNb(path);
      assert.deepEqual(nb.cells[1].outputs, [{ name: "stdout", output_type: "stream", text: ["one\n"] }]);
      assert.equal(nb.cells[2].outputs[0].output_type, "execute_result");
      assert.deepEqual(nb.cells[2].outputs[0].data, { "text/plain": ["42"] });
      assert.deepEqual(nb.cells[3].outputs[0].data["text/html"], ["<b>three</b>"]);
      assert.deepEqual(
        nb.cells.map((c: Json) => c.execution_count),
        [undefined, 1, 2, 3, null, null],
      );
      assert.deepEqual(nb.cells[5].outputs, []);

      // The kernel goes away with its host (its own watchdog), without anyone shutting it down.
      await waitFor(
        "no process with the marker",
        async () => (await pidsWithEnv(m.name, m.value)).length === 0,
        20_000,
      );
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("nbagent run: a file changed underneath mid-run is merged: the other writer's cell stays, every cell's outputs are saved", async () => {
    const dir = join(root, "cli");
    await mkdir(dir);
    const path = await writeNb(join(dir, "shared.ipynb"), [
      ["code", "print('first')"],
      ["code", WAIT_FOR_GO],
      ["code", "print('third')"],
    ]);
    const running = nbagent(["run", path]);
    await waitFor("the waiting cell to start", () => existsSync(join(dir, "ready")), 45_000);
    await otherWriterSaves(path);
    await writeFile(join(dir, "go"), "");
    const r = await running;
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /ran 3 cells in [\d.]+s, 0 failed; the file changed on disk during the run: outputs were merged into it by cell id, the other changes kept\n/,
    );
    const nb = await readNb(path);
    assert.deepEqual(
      nb.cells.map((c: Json) => [c.cell_type, (c.outputs ?? []).map((o: Json) => [o.text].flat().join(""))]),
      [
        ["code", ["first\n"]],
        ["code", ["went\n"]],
        ["code", ["third\n"]],
        ["markdown", []],
      ],
    );
    assert.equal([nb.cells[3].source].flat().join(""), "written by someone else");
    assert.equal(await validate(path), "ok");
  });

  it("notebook tool run (nbagent call): a file changed underneath mid-run is merged, and the text says so", async () => {
    const dir = join(root, "tool");
    await mkdir(dir);
    const path = await writeNb(join(dir, "shared.ipynb"), [
      ["code", "print('first')"],
      ["code", WAIT_FOR_GO],
      ["code", "print('third')"],
    ]);
    const running = nbagent(
      ["call", "notebook", JSON.stringify({ action: "run", notebook_path: path }), "--json"],
      {
        cwd: dir,
      },
    );
    await waitFor("the waiting cell to start", () => existsSync(join(dir, "ready")), 45_000);
    await otherWriterSaves(path);
    await writeFile(join(dir, "go"), "");
    const r = await running;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout);
    assert.notEqual(result.isError, true, resultText(result));
    assert.match(
      resultText(result),
      /^Ran 3 of 3 code cells selected in .*shared\.ipynb \(0-based cell indices\)\. Outputs of the cells that ran are saved in the notebook\.\nThe file changed on disk during the run \(another call or program saved it\): the run's outputs were merged into it by cell id, and the other changes are kept\./,
    );
    const nb = await readNb(path);
    assert.equal(nb.cells.length, 4);
    assert.equal([nb.cells[3].source].flat().join(""), "written by someone else");
    assert.equal([nb.cells[2].outputs[0].text].flat().join(""), "third\n");
  });
});
