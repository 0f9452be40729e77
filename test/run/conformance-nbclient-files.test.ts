/**
 * `nbagent run` against nbclient on the notebooks of nbclient's own test-suite (read from the
 * installed package, not copied here). Left out, on purpose:
 * - JupyterWidgets, Output: need ipywidgets (not installed; widget comm state is out of scope).
 * - Interrupt (`while True`), Sleep1s (wall-clock timestamps as output), Autokill (the kernel
 *   SIGTERMs itself; nbclient raises DeadKernelError instead of writing a file): they test timeouts
 *   and dead kernels, not saved outputs, and would make the file slow or nondeterministic.
 * - Parallel Execute A/B: the nbclient tests inject a cell and an env var to make two notebooks wait
 *   for each other; run as files they only spin until their timeout.
 * - HelloWorld, Unicode, Factorials, Skip Exceptions: the same behaviour as UnicodePy3 and
 *   Skip Exceptions with Cell Tags (and our corpus); every notebook costs nbclient a kernel start.
 * Disable Stdin and Check History in Memory conform because nbagent run, as nbclient, sends
 * allow_stdin=False and starts kernels with --HistoryManager.hist_file=:memory:.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertConforms, type ConformanceRun, runBoth } from "./conformance.js";
import { tempDir } from "./helpers.js";

const FILES = "/usr/lib/python3/dist-packages/nbclient/tests/files";
const SAME = [
  "Check History in Memory.ipynb",
  "Clear Output.ipynb",
  "Disable Stdin.ipynb",
  "Empty Cell.ipynb",
  "Error.ipynb",
  "Inline Image.ipynb",
  "Other Comms.ipynb",
  "SVG.ipynb",
  "Skip Exceptions with Cell Tags.ipynb",
  "Skip Execution with Cell Tag.ipynb",
  "UnicodePy3.ipynb",
  "update-display-id.ipynb",
];

describe("nbagent run conforms to nbclient on nbclient's own test notebooks", {
  skip: existsSync(FILES) ? false : `${FILES} not installed`,
}, () => {
  let dir: string;
  let run: ConformanceRun;

  before(async () => {
    dir = await tempDir();
    run = await runBoth(
      dir,
      SAME.map((n) => join(FILES, n)),
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("exits 0 with --allow-errors", () => {
    assert.equal(run.code, 0, run.stderr);
  });
  for (const name of SAME) {
    it(name, async () => assertConforms(run, join(FILES, name)));
  }
});
