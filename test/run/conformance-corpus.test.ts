/**
 * `nbagent run` against nbclient on our own corpus (test/fixtures/make_run_corpus.py): every output
 * type, clear_output(wait), update_display_data across cells, errors, tags, unicode, images, empty
 * cells, magics, an nbformat 4.4 file.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertConforms, type ConformanceRun, runBoth } from "./conformance.js";
import { makeCorpus, tempDir } from "./helpers.js";

describe("nbagent run conforms to nbclient on the run corpus", () => {
  let dir: string;
  let names: string[];
  let run: ConformanceRun;

  before(async () => {
    dir = await tempDir();
    const input = join(dir, "in");
    names = await makeCorpus(input);
    run = await runBoth(
      dir,
      names.map((n) => join(input, n)),
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("covers the whole corpus and exits 0 with --allow-errors", () => {
    assert.ok(names.length >= 8, `corpus has ${names.length} notebooks`);
    assert.equal(run.code, 0, run.stderr);
  });

  for (const name of [
    "streams.ipynb",
    "displays.ipynb",
    "images.ipynb",
    "clear_and_update.ipynb",
    "errors.ipynb",
    "tags.ipynb",
    "unicode_empty_magic.ipynb",
    "legacy_v44.ipynb",
    "no_code_stale_language.ipynb",
    "foreign_kernelspec.ipynb",
  ]) {
    it(name, async () => {
      assert.ok(names.includes(name), `${name} is in the corpus`);
      await assertConforms(run, join(dir, "in", name));
    });
  }
});
