/**
 * The kernels tool (docs/kernels-tool.md), on real kernels: list shows each live kernel (python
 * session, notebook kernel) with its state, what runs in it and for how long, idle time and memory,
 * and the background runs; interrupt stops the run a kernel is busy with; restart gives a new kernel
 * (state lost) and refuses while a call runs; a bad target is an Error: that changes nothing.
 * Cells block on gate files the test creates, so nothing depends on how fast the machine is.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { KernelBackend } from "../../src/kernel/types.js";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { createKernelsTool } from "../../src/tools/kernels/kernels.js";
import { createPythonTool } from "../../src/tools/python/python.js";
import { RunRegistry } from "../../src/tools/runs/registry.js";
import { backendCases } from "../backends.js";
import { batch, type Json, resultText, writeNb } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-kernels-"));
const boxes: (Toolbox | Runtime)[] = [];
after(async () => {
  await Promise.all(boxes.map((b) => b.dispose()));
  rmSync(root, { recursive: true, force: true });
});

function toolbox(runtime: { backend?: KernelBackend } = {}) {
  const cwd = mkdtempSync(join(root, "w-"));
  const box = createToolbox({
    settings: testSettings(),
    cwd,
    runtime: { stateRoot: join(root, "state"), ...runtime },
    waitSeconds: 1,
  });
  boxes.push(box);
  const tool = (name: string) => (params: Json) =>
    box.tools.find((t) => t.name === name)!.execute("t", params) as Promise<Json>;
  return { cwd, box, py: tool("python"), nb: tool("notebook"), runs: tool("runs"), kernels: tool("kernels") };
}

/** Python that blocks until `path` exists. */
const gate = (path: string) =>
  `import os, time\nwhile not os.path.exists(${JSON.stringify(path)}): time.sleep(0.02)`;

/** "85.3 MiB" → bytes. */
function bytesOf(text: string): number {
  const m = /^([\d.]+) (KiB|MiB|GiB)$/.exec(text);
  assert.ok(m, `a size: ${text}`);
  return Number(m[1]) * { KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 }[m[2] as "KiB" | "MiB" | "GiB"];
}

describe("the kernels tool", { concurrency: true }, () => {
  test("an empty host says so plainly", async () => {
    const { kernels } = toolbox();
    const r = await kernels({});
    assert.equal(r.isError, undefined);
    assert.equal(
      resultText(r),
      "No live kernels: no python session, notebook kernel or named session is kept in this process (at most 4 can be). A python call or a notebook run starts one.\nNo background runs.",
    );
  });

  test("list: an idle session, a busy background run, a notebook kernel; interrupt ends the run; restart loses state", async () => {
    const { cwd, py, nb, runs, kernels } = toolbox();
    await py({ cells: [{ code: "kept = 'yes'" }], wait: 600 });
    const path = await writeNb(join(cwd, "n.ipynb"), [["code", "y = 2"]]);
    await nb({ action: "run", notebook_path: path, wait: 600 });
    const g = join(cwd, "never");
    const started = await py({ cells: [{ code: `print('in', flush=True)\n${gate(g)}` }], session: "work" });
    const id = /run (r\d+)/.exec(resultText(started))![1];
    // The run is in its cell (its first look said so, or a later one does).
    let look = resultText(started);
    while (!/cell 1 is running/.test(look)) look = resultText(await runs({ run_id: id, wait: 1 }));

    const listed = resultText(await kernels({ action: "list" }));
    const lines = listed.split("\n");
    assert.match(
      lines[0],
      /^3 live kernels \(at most 4 kept; 1 slot free; a new one beyond that replaces the least recently used idle one; one unused for 5 minutes is shut down\):$/,
    );
    const def = lines.find((l) => l.startsWith('- python session "default"'));
    const m =
      /^- python session "default" \[local\]: idle for \d+ s \(since its last call ended\); memory ([\d.]+ \w+)\.$/.exec(
        def ?? "",
      );
    assert.ok(m, listed);
    const bytes = bytesOf(m[1]);
    assert.ok(bytes > 10 * 2 ** 20 && bytes < 10 * 2 ** 30, `plausible kernel memory: ${m[1]}`);
    assert.match(
      listed,
      new RegExp(
        `\\n- python session "work" \\[local\\]: busy for \\d+ s: run ${id} \\(python call\\), cell 1 running; memory [\\d.]+ \\w+\\.\\n`,
      ),
    );
    assert.match(
      listed,
      /\n- the notebook kernel of n\.ipynb \[local\]: idle for \d+ s \(since its last call ended\); memory [\d.]+ \w+\.\n/,
    );
    assert.match(
      listed,
      new RegExp(
        `\\nBackground runs:\\n- run ${id} \\(python call\\): running for \\d+ s, in python session "work"\\.\\n`,
      ),
    );
    assert.match(
      listed,
      new RegExp(
        `\\nTo interrupt a running cell: \\{"action":"interrupt","run_id":"${id}"\\}; to restart a kernel \\(a new kernel, its state lost\\): \\{"action":"restart","session_id":"default"\\}\\. Targets: session_id, notebook_path or run_id\\.$`,
      ),
    );

    // restart refuses while the run holds the kernel, and names it
    const refused = await kernels({ action: "restart", session_id: "work" });
    assert.equal(refused.isError, true);
    assert.match(
      resultText(refused),
      new RegExp(
        `^Error: python session "work" is busy: run ${id} \\(python call\\) has held it for \\d+ s \\(cell 1 running\\)\\. It was not restarted, since that would end the running call and lose its result\\. Interrupt it first \\(\\{"action":"interrupt","run_id":"${id}"\\}\\) or wait for it \\(runs tool \\{"run_id":"${id}"\\}\\), then restart\\.$`,
      ),
    );

    // interrupt by the session's id stops the run it is busy with
    const stopped = await kernels({ action: "interrupt", session_id: "work" });
    assert.equal(stopped.isError, undefined);
    assert.match(
      resultText(stopped),
      new RegExp(
        `^Interrupted run ${id} \\(python call\\), which had held python session "work" for \\d+ s \\(cell 1 running\\)\\. The running cell was interrupted and the run has ended; the kernel keeps its state\\. Its result: call the runs tool with \\{"run_id":"${id}"\\}\\.$`,
      ),
    );
    const end = resultText(await runs({ run_id: id, wait: 600 }));
    assert.match(end, /KeyboardInterrupt/);
    assert.match(
      end,
      /Cell 1 was interrupted: the call was cancelled \(interrupted through the kernels tool\); the kernel keeps its state\.$/,
    );

    // an idle kernel: nothing to interrupt
    assert.equal(
      resultText(await kernels({ action: "interrupt", session_id: "default" })),
      'Python session "default" is idle: nothing to interrupt (no interrupt was sent).',
    );

    // restart: a new kernel, the text says the state is lost, and it is
    const restarted = await kernels({ action: "restart", session_id: "default" });
    assert.equal(restarted.isError, undefined);
    assert.match(
      resultText(restarted),
      /^Restarted python session "default": it runs a new kernel\. Its state is lost: variables, imports and loaded data from earlier calls are gone; the next call starts from scratch \(re-import and re-load what it needs\)\. Its memory now: [\d.]+ \w+\.$/,
    );
    assert.match(
      resultText(await py({ cells: [{ code: "print(kept)" }], wait: 600, export_notebook: "work.ipynb" })),
      /NameError: name 'kept' is not defined/,
    );
    // The session's export marks where the restart lost its state.
    const exported = JSON.parse(readFileSync(join(cwd, "work.ipynb"), "utf8"));
    const notes = exported.cells
      .filter((c: Json) => c.cell_type === "markdown")
      .map((c: Json) => [c.source].flat().join(""));
    assert.ok(
      notes.some((n: string) => n.startsWith("**Kernel restarted here** (through the kernels tool)")),
      JSON.stringify(notes),
    );

    // the notebook's kernel by its path
    const nbRestart = resultText(await kernels({ action: "restart", notebook_path: "n.ipynb" }));
    assert.match(
      nbRestart,
      /^Restarted the notebook kernel of n\.ipynb: it runs a new kernel\. .*none of the notebook's cells have run in it/,
    );
    assert.match(
      resultText(await py({ cells: [{ code: "print(y)" }], notebook_path: "n.ipynb", wait: 600 })),
      /NameError: name 'y' is not defined/,
    );
  });

  test("a bad target is an Error: naming the valid ones, and nothing changes", async () => {
    const { py, kernels } = toolbox();
    const first = await py({ cells: [{ code: "kept = 'yes'" }], wait: 600 });
    assert.equal(first.isError, undefined, resultText(first));
    const before = resultText(await kernels({}));
    for (const [params, head] of [
      [{ action: "restart", session_id: "nope" }, 'Error: no live python session "nope" here.'],
      [{ action: "interrupt", run_id: "r9" }, 'Error: no run "r9" here.'],
      [
        { action: "restart", notebook_path: "x.ipynb" },
        "Error: no live kernel for the notebook x.ipynb here.",
      ],
    ] as const) {
      const r = await kernels(params);
      assert.equal(r.isError, true);
      assert.equal(resultText(r), `${head} Valid targets: session_id "default".`);
    }
    const two = await kernels({ action: "restart", session_id: "default", run_id: "r1" });
    assert.equal(
      resultText(two),
      'Error: restart needs exactly one target: session_id, notebook_path or run_id (got session_id, run_id). Valid targets: session_id "default".',
    );
    assert.equal(resultText(await py({ cells: [{ code: "print(kept)" }], wait: 600 })), "yes");
    const steady = (t: string) => t.replace(/idle for \d+ s/, "idle").replace(/memory [\d.]+ \w+/, "memory");
    assert.equal(steady(resultText(await kernels({}))), steady(before));
  });

  test("a call that is no background run: interrupt sends the kernel an interrupt, the call's result shows it", async () => {
    const cwd = mkdtempSync(join(root, "f-"));
    const runtime = createRuntime({ settings: testSettings(), stateRoot: join(root, "state") });
    boxes.push(runtime);
    // A python tool without a runs registry: its calls are waited for, never runs.
    const python = createPythonTool({ cwd, runtime });
    const kernels = (p: Json) =>
      createKernelsTool({ cwd, runtime, runs: new RunRegistry() }).execute("t", p) as Promise<Json>;
    await python.execute("t", { cells: [{ code: "kept = 1" }] });
    const call = python.execute("t", { cells: [{ code: gate(join(cwd, "never")) }], timeout: 600 });
    let listed = "";
    while (!/cell 1 running/.test(listed)) {
      listed = resultText(await kernels({}));
      await new Promise((r) => setTimeout(r, 20)); // a condition, polled
    }
    assert.match(
      listed,
      /\n- python session "default" \[local\]: busy for \d+ s: a python call, cell 1 running; memory /,
    );
    const sent = await kernels({ action: "interrupt", session_id: "default" });
    assert.equal(
      resultText(sent).replace(/\d+ s/, "N s"),
      'Sent an interrupt to python session "default": a python call had held it for N s (cell 1 running). The running cell stops with KeyboardInterrupt unless it catches or ignores it; that call\'s result shows what happened. This interrupt does not restart the kernel: its state is kept.',
    );
    assert.match(resultText(await call), /KeyboardInterrupt/);
    assert.equal(resultText(await python.execute("t", { cells: [{ code: "print(kept)" }] })), "1");
  });

  test("through nbagent batch: the list names the session and its memory", async () => {
    const cwd = mkdtempSync(join(root, "b-"));
    const { results } = await batch(cwd, [
      { tool: "python", params: { cells: [{ code: "x = 1" }], wait: 600 } },
      { tool: "kernels", params: {} },
      { tool: "kernels", params: { action: "restart", session_id: "default" } },
      { tool: "python", params: { cells: [{ code: "x" }], wait: 600 } },
    ]);
    assert.match(
      resultText(results[1]),
      /^1 live kernel \(at most 4 kept; 3 slots free; [^\n]*\n- python session "default" \[local\]: idle for \d+ s \(since its last call ended\); memory [\d.]+ MiB\.\nNo background runs\.\n/,
    );
    assert.match(
      resultText(results[2]),
      /^Restarted python session "default": it runs a new kernel\. Its state is lost/,
    );
    assert.match(resultText(results[3]), /NameError: name 'x' is not defined/);
  });
});

for (const backend of backendCases().filter((b) => b.name === "gateway")) {
  describe("the kernels tool on a gateway", () => {
    after(() => backend.dispose());
    test("a gateway kernel's memory is said to be not known, with its kernel id", async () => {
      const { py, kernels } = toolbox({ backend: await backend.create() });
      await py({ cells: [{ code: "1" }], wait: 600 });
      assert.match(
        resultText(await kernels({})),
        /\n- python session "default" \[gateway, kernel id [0-9a-f-]+\]: idle for \d+ s \(since its last call ended\); memory not known \(the kernel runs on the gateway\)\.\n/,
      );
    });
  });
}
