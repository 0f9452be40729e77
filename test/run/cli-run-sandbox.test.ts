/**
 * `nbagent run --sandbox` on this machine really sandboxes its kernels (docs/isolation.md): a cell
 * writes in its notebook's folder, a cell that writes outside it fails, and nbagent still writes the
 * executed notebook (it does that itself, outside the sandbox).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { findBwrap } from "../../src/kernel/index.js";
import { nbagent, tempDir } from "./helpers.js";

// Not under TMPDIR: inside the sandbox that is a private (writable) tmpfs.
const outsideDir = mkdtempSync("/var/tmp/nbagent-run-outside-");
after(() => rmSync(outsideDir, { recursive: true, force: true }));

const cell = (source: string, id: string) => ({
  cell_type: "code",
  id,
  execution_count: null,
  metadata: {},
  outputs: [],
  source,
});

test("nbagent run --sandbox: writing in the notebook's folder works, writing outside it fails", {
  skip: !findBwrap(process.env) && "bubblewrap is not installed",
}, async () => {
  const dir = await tempDir();
  const outside = join(outsideDir, "escaped");
  const nb = {
    cells: [
      cell("with open('inside', 'w') as f:\n    f.write('ok')", "in"),
      cell(`open(${JSON.stringify(outside)}, 'w').write('escaped')`, "out"),
    ],
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  writeFileSync(join(dir, "nb.ipynb"), JSON.stringify(nb));
  const r = await nbagent(["run", "--sandbox", join(dir, "nb.ipynb"), "--allow-errors"], {
    unset: ["NBAGENT_GATEWAY_URL", "NBAGENT_SANDBOX"],
  });
  assert.equal(readFileSync(join(dir, "inside"), "utf8"), "ok");
  assert.equal(existsSync(outside), false, "nothing was written outside the notebook's folder");
  const out = JSON.parse(readFileSync(join(dir, "nb.ipynb"), "utf8"));
  assert.equal(out.cells[0].outputs.length, 0, JSON.stringify(out.cells[0].outputs));
  assert.equal(out.cells[1].outputs[0].ename, "OSError", r.stderr);
  assert.match(out.cells[1].outputs[0].evalue, /Read-only file system/);
  assert.equal(r.code, 0, r.stderr);
});
