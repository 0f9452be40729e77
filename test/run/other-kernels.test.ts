/**
 * Kernels of other languages (docs/kernels.md), on kernelspecs the test pins (test/kernels.ts):
 * - nothing of nbagent's Python set-up reaches a kernel whose language is not Python: a logging
 *   kernel receives exactly the notebook's cells, through `nbagent run` (-j 2 too) and the notebook
 *   tool (`run`, `execute: true`) over `nbagent batch`;
 * - IRkernel and Octave notebooks run by `nbagent run` equal nbclient's after normalisation,
 *   including an R cell that keeps IRkernel's main loop (and so its heartbeat) busy past the
 *   heartbeat's limit;
 * - a silent heartbeat is only a hint: it shows while an R cell sleeps and clears once IRkernel
 *   answers again (its heartbeat is a REP socket: a ping without the REQ envelope never got an answer
 *   and left its main loop waiting);
 * - `nbagent doctor` lists the kernelspecs and whether each starts.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLocalBackend } from "../../src/kernel/index.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { loggedCode, type PinnedKernels, pinnedKernels, SKIP_OCTAVE, SKIP_R } from "../kernels.js";
import { testSettings } from "../settings.js";
import { assertConforms, type ConformanceRun, runBoth } from "./conformance.js";
import { batch, type Json, nbagent, readNb, resultText, tempDir, writeNb } from "./helpers.js";

const cellTexts = (nb: Json): string[] =>
  nb.cells
    .filter((c: Json) => c.cell_type === "code")
    .map((c: Json) => c.outputs.map((o: Json) => o.text ?? "").join(""));

/** A notebook for a pinned kernelspec, written by nbformat: a title (id c0), then code cells c1, c2 … */
function notebookFor(path: string, spec: string, language: string, cells: string[]): Promise<string> {
  const code = cells.map((c) => ["code", c] as ["code", string]);
  return writeNb(path, [["markdown", `# ${spec}`], ...code], { name: spec, display_name: spec, language });
}

describe("a kernel of another language gets only the notebook's own code", { concurrency: true }, () => {
  async function setup(): Promise<{ dir: string; kernels: PinnedKernels }> {
    const dir = await tempDir();
    return { dir, kernels: await pinnedKernels(dir) };
  }

  it("nbagent run, one notebook and two with -j 2: the kernel receives the cells, nothing else", async () => {
    const { dir, kernels } = await setup();
    const one = join(dir, "one.ipynb");
    const two = join(dir, "two.ipynb");
    await notebookFor(one, "nbagent-test-log", "logtext", ["first cell", "second cell"]);
    await notebookFor(two, "nbagent-test-log", "logtext", ["third cell"]);
    const r = await nbagent(["run", one], { env: kernels.env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await loggedCode(kernels), ["first cell", "second cell"]);
    assert.deepEqual(cellTexts(await readNb(one)), ["first cell\n", "second cell\n"]);
    assert.equal((await readNb(one)).metadata.language_info.name, "logtext");

    const both = await nbagent(["run", "-j", "2", one, two], { env: kernels.env });
    assert.equal(both.code, 0, both.stderr);
    const sent = await loggedCode(kernels);
    assert.deepEqual(sent.slice(2).sort(), ["first cell", "second cell", "third cell"]);
  });

  it("the notebook tool over nbagent batch: run and an insert with execute:true send only the cells", async () => {
    const { dir, kernels } = await setup();
    await notebookFor(join(dir, "nb.ipynb"), "nbagent-test-log", "logtext", ["alpha", "beta"]);
    const { code, results } = await batch(
      dir,
      [
        { tool: "notebook", params: { action: "run", notebook_path: "nb.ipynb" } },
        {
          tool: "notebook",
          params: {
            action: "insert",
            notebook_path: "nb.ipynb",
            cell_index: 3,
            content: "gamma",
            execute: true,
          },
        },
      ],
      kernels.env,
    );
    assert.equal(code, 0);
    assert.deepEqual(await loggedCode(kernels), ["alpha", "beta", "gamma"]);
    const ran = resultText(results[0]);
    assert.match(ran, /^Ran 2 of 2 code cells/);
    assert.match(ran, /\[cell 1 \(id c1\)\]\nalpha\n\[cell 2 \(id c2\)\]\nbeta$/);
    assert.match(resultText(results[1]), /gamma/);
    assert.deepEqual(cellTexts(await readNb(join(dir, "nb.ipynb"))), ["alpha\n", "beta\n", "gamma\n"]);
  });
});

describe("IRkernel", { skip: SKIP_R }, () => {
  let dir: string;
  let kernels: PinnedKernels;
  let run: ConformanceRun;
  const inputs: string[] = [];

  before(async () => {
    dir = await tempDir();
    kernels = await pinnedKernels(dir);
    const notebooks: Record<string, string[]> = {
      "r-basics.ipynb": [
        "x <- c(3, 1, 2)\nprint(sort(x))\ncat('sum:', sum(x), '\\n')",
        "df <- data.frame(a = 1:3, b = c('x', 'y', 'z'))\ndf",
        "message('to stderr')\nwarning('careful')",
        "stop('boom')",
        "f <- function(n) if (n <= 1) 1 else n * f(n - 1)\nf(10)",
        "cat('caf\u00e9 \u2713\\n')\nlist(a = 1, b = 'two')",
        "getwd() == normalizePath('.')",
        "for (i in 1:3) cat(i, '\\n')",
        "plot(1:10)",
      ],
      // Busy past the heartbeat's limit (5 pings, 15 s): IRkernel answers pings only between cells.
      "r-busy.ipynb": ["Sys.sleep(17)\ncat('woke\\n')", "cat('next\\n')"],
    };
    for (const [name, cells] of Object.entries(notebooks)) {
      const path = join(dir, name);
      await notebookFor(path, "nbagent-test-r", "R", cells);
      inputs.push(path);
    }
    run = await runBoth(dir, inputs, { env: kernels.env, kernel: "nbagent-test-r" });
  });

  it("nbagent run writes what nbclient writes, busy cell included; exit 0 (errors allowed)", async () => {
    assert.equal(run.code, 0, run.stderr);
    for (const input of inputs) await assertConforms(run, input);
    const busy = await readNb(join(run.ours, "r-busy.ipynb"));
    assert.deepEqual(cellTexts(busy), ["woke\n", "next\n"]);
  });

  it("the notebook tool on an R notebook over nbagent batch: outputs, and an R error on one line", async () => {
    const work = await tempDir();
    await notebookFor(join(work, "r.ipynb"), "nbagent-test-r", "R", [
      "x <- 1:10\ncat(sum(x), '\\n')",
      "stop('boom')",
      "cat('never\\n')",
    ]);
    const { code, results } = await batch(
      work,
      [{ tool: "notebook", params: { action: "run", notebook_path: "r.ipynb" } }],
      kernels.env,
    );
    assert.equal(code, 1);
    const text = resultText(results[0]);
    assert.equal(results[0].isError, true);
    assert.match(text, /\[cell 1 \(id c1\)\]\n55 \n/);
    // IRkernel's evalue ends with a newline and repeats its ename (ERROR): one sentence, on its line.
    assert.match(
      text,
      /\nCell 2 failed: Error in [^\n]*: boom\.\nCell 1 ran in this call; its state persists, so only cell 2 onward needs to run again\.\nCell 3 did not run\.\n/,
    );
  });

  it("a silent heartbeat is a hint while the R cell runs, and clears when IRkernel answers", async () => {
    const backend = createLocalBackend({
      ...localBackendOptions(testSettings({ ...process.env, ...kernels.env })),
      forkServer: false,
      heartbeat: { intervalMs: 100, misses: 3 },
    });
    after(() => backend.dispose());
    const kernel = await backend.startKernel({ kernelName: "nbagent-test-r" });
    const deaths: string[] = [];
    kernel.onDeath((reason) => deaths.push(reason));
    const seen: boolean[] = [];
    // Until the file appears: as long as the test needs, not a time.
    const gate = join(dir, "go");
    const running = kernel.execute(
      `while (!file.exists(${JSON.stringify(gate)})) Sys.sleep(0.05)\ncat('done\\n')`,
    );
    while (kernel.stats().heartbeatSilentMs === undefined) await new Promise((r) => setTimeout(r, 20));
    seen.push(true);
    await writeFile(gate, "");
    const r = await running;
    assert.equal(r.status, "ok");
    assert.equal(r.text, "done\n");
    while (kernel.stats().heartbeatSilentMs !== undefined) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(deaths, []);
    assert.equal((await kernel.execute("cat(6 * 7)")).text, "42");
    await kernel.shutdown();
    assert.deepEqual(seen, [true]);
  });
});

describe("Octave", { skip: SKIP_OCTAVE }, () => {
  it("nbagent run writes what nbclient writes", async () => {
    const dir = await tempDir();
    const kernels = await pinnedKernels(dir);
    const input = join(dir, "octave-basics.ipynb");
    await notebookFor(input, "nbagent-test-octave", "octave", [
      "x = [3 1 2];\ndisp(sort(x))",
      "y = x * 2",
      "printf('sum: %d\\n', sum(x))",
      "error('boom')",
      "a.b = 1; a.c = 'two';\na",
      "strcmp(pwd, canonicalize_file_name('.'))",
    ]);
    const run = await runBoth(dir, [input], { env: kernels.env, kernel: "nbagent-test-octave" });
    assert.equal(run.code, 0, run.stderr);
    await assertConforms(run, input);
    const texts = cellTexts(await readNb(join(run.ours, "octave-basics.ipynb")));
    assert.match(texts[2], /sum: 6/);
    assert.match(texts[5], /ans = 1/);
  });
});

describe("nbagent doctor", () => {
  it("lists every kernelspec found and whether it starts", async () => {
    const dir = await tempDir();
    const kernels = await pinnedKernels(dir);
    const broken = join(dir, "jupyter", "kernels", "nbagent-test-broken");
    await mkdir(broken);
    await writeFile(
      join(broken, "kernel.json"),
      JSON.stringify({
        argv: ["/nonexistent/kernel", "{connection_file}"],
        display_name: "Broken",
        language: "none",
      }),
    );
    const r = await nbagent(["doctor"], { env: kernels.env });
    assert.match(
      r.stdout,
      /^ok {3}kernel nbagent-test-log: Log \(nbagent tests\): logtext \(logkernel\), started in \d+\.\d s$/m,
    );
    assert.match(
      r.stdout,
      /^ok {3}kernel python3: Python 3 \(ipykernel\): python \d+\.\d+\.\d+ \(ipython\), started in/m,
    );
    assert.match(r.stdout, /^warn kernel nbagent-test-broken: does not start: .+$/m);
    assert.equal(r.code, 0, "a kernel that does not start is a warning, not a failure");
  });
});
