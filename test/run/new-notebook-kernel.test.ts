/**
 * `insert` that creates a notebook for another kernel (`kernel`): the file gets that kernelspec and
 * runs in it; a name no kernelspec has is refused with the ones there are; `kernel` on a notebook
 * that exists is refused rather than ignored (docs/notebook-tool.md, "Creating a notebook"). The
 * kernelspecs are the ones the test pins (test/kernels.ts), so the machine's own change nothing.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loggedCode, type PinnedKernels, pinnedKernels, SKIP_R } from "../kernels.js";
import { batch, type Json, perTestDirs, readNb, resultText, validate, writeNb } from "./helpers.js";

/** One insert creating `path` at index 0 for `kernel`, through nbagent batch with the pinned kernels. */
async function createFor(
  d: string,
  kernels: PinnedKernels,
  path: string,
  content: string,
  kernel: string,
  execute = false,
): Promise<Json> {
  const params = {
    action: "insert",
    notebook_path: path,
    cell_index: 0,
    content,
    kernel,
    ...(execute && { execute }),
  };
  const { results } = await batch(d, [{ tool: "notebook", params }], kernels.env);
  return results[0];
}

describe("insert creating a notebook for a kernel", { concurrency: true }, () => {
  const dir = perTestDirs();

  it("kernel names the kernelspec: the file records it and execute: true runs the cell there", async () => {
    const d = await dir();
    const kernels = await pinnedKernels(d);
    const result = await createFor(d, kernels, "log.ipynb", "hello log", "nbagent-test-log", true);
    const text = resultText(result);
    assert.match(
      text,
      /^Created log\.ipynb \(nbformat 4\.5, kernel nbagent-test-log: Log \(nbagent tests\)\)\. Inserted code cell at position 0 \(id [0-9a-f]{8}\)\./m,
    );
    assert.match(text, /hello log/);
    assert.deepEqual(await loggedCode(kernels), ["hello log"]);
    const nb = await readNb(join(d, "log.ipynb"));
    assert.deepEqual(nb.metadata.kernelspec, {
      display_name: "Log (nbagent tests)",
      language: "logtext",
      name: "nbagent-test-log",
    });
    assert.equal(nb.metadata.language_info.name, "logtext");
    assert.equal(await validate(join(d, "log.ipynb")), "ok");
  });

  it("a name no kernelspec has: Error with the names there are, nothing created", async () => {
    const d = await dir();
    const kernels = await pinnedKernels(d);
    const result = await createFor(d, kernels, "x.ipynb", "1", "julia-9");
    const text = resultText(result);
    assert.equal(result.isError, true);
    assert.match(
      text,
      /^Error: Cannot create x\.ipynb: no kernelspec named "julia-9"\. Available: [^\n]*\bnbagent-test-log\b[^\n]*\. Use one of these names\. Nothing was created\.$/,
    );
    assert.match(text, /\bpython3\b/);
    assert.equal(existsSync(join(d, "x.ipynb")), false);
  });

  it("kernel on a notebook that exists: Error, the file byte-identical", async () => {
    const d = await dir();
    const path = await writeNb(join(d, "nb.ipynb"), [["code", "1"]]);
    const before = await readFile(path, "utf8");
    const { results } = await batch(d, [
      {
        tool: "notebook",
        params: { action: "insert", notebook_path: "nb.ipynb", cell_index: 1, content: "2", kernel: "ir" },
      },
      { tool: "notebook", params: { action: "read", notebook_path: "nb.ipynb", kernel: "ir" } },
    ]);
    assert.equal(
      resultText(results[0]),
      'Error: kernel chooses the kernel of a notebook that insert creates; nb.ipynb exists (its kernelspec is "python3"). Nothing was changed; leave kernel out to insert into it.',
    );
    assert.equal(resultText(results[1]), "Error: kernel goes with insert, not read.");
    assert.equal(await readFile(path, "utf8"), before);
  });

  it("an R notebook (IRkernel): created for R, its cell runs in R", { skip: SKIP_R }, async () => {
    const d = await dir();
    const kernels = await pinnedKernels(d);
    const result = await createFor(
      d,
      kernels,
      "r.ipynb",
      "cat(sum(1:3), R.version$language)",
      "nbagent-test-r",
      true,
    );
    const text = resultText(result);
    assert.match(text, /^Created r\.ipynb \(nbformat 4\.5, kernel nbagent-test-r: R \(nbagent tests\)\)\./m);
    assert.match(text, /6 R/);
    const nb: Json = await readNb(join(d, "r.ipynb"));
    assert.equal(nb.metadata.kernelspec.language, "R");
    assert.equal(nb.metadata.language_info.name, "R");
    assert.match(nb.metadata.language_info.version ?? "", /^\d+\.\d+/);
    assert.equal(await validate(join(d, "r.ipynb")), "ok");
  });
});
