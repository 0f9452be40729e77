/**
 * What a notebook run's result says about the file (docs/notebook-tool.md, "A run merges with other
 * edits"), through the MCP SDK client on `nbagent mcp`: nbagent's own saves are never reported as
 * another writer's (a cancelled run saving what completed while the next run waited for the
 * kernel), and a cell another writer moved is named by one index in the whole text.
 */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { stdioServer, textOf } from "../mcp/helpers.js";
import {
  type Json,
  oneShotToolbox,
  perTestDirs,
  python,
  readNb,
  resultText,
  waitFor,
  writeNb,
} from "./helpers.js";

/** Another program changes the notebook as Jupyter saves it: nbformat.read, change, nbformat.write. */
async function otherProgram(path: string, change: string): Promise<void> {
  const code =
    "import sys, nbformat\nfrom nbformat.v4 import new_markdown_cell\n" +
    "p = sys.argv[1]\nnb = nbformat.read(p, as_version=4)\n" +
    `${change}\nnbformat.write(nb, p)\n`;
  await python(["-c", code, path]);
}

/** A cell that says it started, sleeps, and once interrupted holds the kernel until file `go` exists. */
function slowCell(cwd: string): string {
  const started = JSON.stringify(join(cwd, "started"));
  const go = JSON.stringify(join(cwd, "go"));
  return [
    "import os, time",
    `open(${started}, "w").close()`,
    "try:",
    "    time.sleep(600)",
    "except KeyboardInterrupt:",
    `    while not os.path.exists(${go}): time.sleep(0.02)`,
    "    raise",
  ].join("\n");
}

describe("run results and the file", { concurrency: true }, () => {
  const dir = perTestDirs();

  test("the tool directly, cancelled through its abort signal: the next run does not report that run's save", async () => {
    const cwd = await dir();
    await writeNb(join(cwd, "n.ipynb"), [
      ["code", "print('one')"],
      ["code", slowCell(cwd)],
      ["code", "print('three')"],
    ]);
    const { box, tool } = oneShotToolbox(cwd);
    try {
      const notebook = box.tools.find((t) => t.name === "notebook")!;
      const abort = new AbortController();
      const cancelled = notebook.execute(
        "t1",
        { action: "run", notebook_path: "n.ipynb", timeout: 900 } as never,
        abort.signal,
      );
      await waitFor("the slow cell to start", () => existsSync(join(cwd, "started")), 120_000);
      abort.abort();
      const next = tool("notebook")({ action: "run", notebook_path: "n.ipynb", cell_index: 0 });
      await waitFor("the next run to wait for the kernel", async () =>
        /1 call waiting for it/.test(resultText(await tool("kernels")({ action: "list" }))),
      );
      writeFileSync(join(cwd, "go"), "");
      assert.match(resultText(await cancelled), /Cell 1 was interrupted: the call was cancelled/);
      assert.equal(
        resultText(await next),
        "Ran 1 of 1 code cell selected in n.ipynb (0-based cell indices). Outputs of the cells that ran are saved in the notebook.\n[cell 0 (id c0)]\none",
      );
    } finally {
      await box.dispose();
    }
  });

  test("MCP: after a cancelled run, the next run does not report the cancelled run's save as another writer's", async () => {
    const cwd = await dir();
    // Cancelled, the cell holds the kernel until the test says so: the next run loads the file and
    // waits for the kernel meanwhile, and the cancelled run's last save comes after that load.
    const slow = slowCell(cwd);
    const path = await writeNb(join(cwd, "n.ipynb"), [
      ["code", "print('one')"],
      ["code", slow],
      ["code", "print('three')"],
    ]);
    const server = await stdioServer(["--cwd", cwd]);
    try {
      const abort = new AbortController();
      const cancelled = server.client.callTool(
        { name: "notebook", arguments: { action: "run", notebook_path: "n.ipynb", timeout: 900 } },
        undefined,
        { signal: abort.signal, timeout: 900_000 },
      );
      await waitFor("the slow cell to start", () => existsSync(join(cwd, "started")), 120_000);
      abort.abort(new Error("the test cancels"));
      await assert.rejects(cancelled, /the test cancels/);
      const next = server.client.callTool({
        name: "notebook",
        arguments: { action: "run", notebook_path: "n.ipynb", cell_index: 0 },
      });
      // The next run has loaded the file and waits for the kernel the cancelled run still holds.
      await waitFor("the next run to wait for the kernel", async () =>
        /1 call waiting for it/.test(
          textOf(await server.client.callTool({ name: "kernels", arguments: { action: "list" } })),
        ),
      );
      writeFileSync(join(cwd, "go"), "");
      const r = (await next) as Json;
      assert.equal(r.isError, undefined, textOf(r));
      assert.equal(
        textOf(r),
        "Ran 1 of 1 code cell selected in n.ipynb (0-based cell indices). Outputs of the cells that ran are saved in the notebook.\n[cell 0 (id c0)]\none",
      );
      const saved = await readNb(path);
      assert.equal(saved.cells[1].outputs[0]?.ename, "KeyboardInterrupt", "the cancelled run saved its cell");
    } finally {
      await server.client.close();
    }
  });

  test("MCP: a cell another program moved is named by its index now, once said 'now at index N'", async () => {
    const cwd = await dir();
    const started = JSON.stringify(join(cwd, "started"));
    const go = JSON.stringify(join(cwd, "go"));
    const gated = `import os, time\nopen(${started}, "w").close()\nwhile not os.path.exists(${go}): time.sleep(0.02)\nprint('two')`;
    const path = await writeNb(join(cwd, "a.ipynb"), [
      ["code", "print('one')"],
      ["code", gated],
      ["code", "print('three')"],
      ["code", "1/0"],
      ["code", "print('five')"],
    ]);
    const server = await stdioServer(["--cwd", cwd]);
    try {
      const running = server.client.callTool(
        { name: "notebook", arguments: { action: "run", notebook_path: "a.ipynb", timeout: 600 } },
        undefined,
        { timeout: 600_000 },
      );
      await waitFor("the gated cell to start", () => existsSync(join(cwd, "started")), 120_000);
      await otherProgram(
        path,
        "c = new_markdown_cell('# intro')\nc['id'] = 'm0'\nnb.cells.insert(0, c)\nnb.cells[3].source = \"print('THREE')\"",
      );
      writeFileSync(join(cwd, "go"), "");
      const r = (await running) as Json;
      const text = textOf(r);
      assert.equal(r.isError, true, text);
      const lines = text.split("\n");
      assert.deepEqual(lines.slice(0, 3), [
        "Ran 4 of 5 code cells selected in a.ipynb (0-based cell indices). Outputs of the cells that ran are saved in the notebook.",
        "The file changed on disk during the run (another call or program saved it): the run's outputs were merged into it by cell id, and the other changes are kept. Read it again before editing by index.",
        "Cell 2 (id c2), now at index 3, was edited after the run started: its new source ran.",
      ]);
      // Thereafter the moved cells go by their index now: headers, status lines, the resume hint.
      assert.ok(lines.includes("[cell 3 (id c2)]"), text);
      assert.ok(lines.includes("[cell 4 (id c3)]"), text);
      assert.doesNotMatch(text, /\[cell 2 \(id c2\)\]|\[cell 3 \(id c3\)\]/);
      assert.match(text, /Cell 5 did not run\./);
      assert.match(
        text,
        /To run from cell 4 on once it is fixed: \{"action":"run","notebook_path":"a\.ipynb","cell_range":\[4,5\]\}$/,
      );
    } finally {
      await server.client.close();
    }
  });
});
