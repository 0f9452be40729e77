/**
 * runNotebooks (the engine under `nbagent run`) never writes an output file before its input was
 * read and found valid, whoever calls it (the CLI checks first too; this holds without it).
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, test } from "node:test";
import { createKernelProvider } from "../../src/runtime/kernel-provider.js";
import { runNotebooks } from "../../src/runtime/run-notebooks.js";
import { testSettings } from "../settings.js";
import { tempDir } from "./helpers.js";

const kernels = createKernelProvider({ stateRoot: await tempDir(), settings: testSettings({}) });
after(() => kernels.dispose());

test("a bad input leaves an existing output byte-identical and is reported against the input", async () => {
  const dir = await tempDir();
  const existing = join(dir, "existing.ipynb");
  const original = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n';
  await writeFile(existing, original);
  const bad = join(dir, "bad.ipynb");
  for (const content of ["{not json", '{"nbformat": 4}', ""]) {
    await writeFile(bad, content);
    const [r] = await runNotebooks({ jobs: [{ input: bad, output: existing }], kernels });
    assert.ok(r.error, "the job failed");
    assert.match(r.error, /bad\.ipynb/);
    assert.doesNotMatch(r.error, /existing\.ipynb/);
    assert.equal(await readFile(existing, "utf8"), original);
  }
});
