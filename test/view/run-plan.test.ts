/**
 * A notebook run's plan on the event stream (docs/view.md, "Events"): `cells-queued` names the
 * cells the run is to run, in order, before the first one starts, and `[]` once the run has ended —
 * here stopped by an error, so the page's last cell, which never ran, is not left marked waiting.
 */
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import type { RuntimeEvent } from "../../src/runtime/events.js";
import { createToolbox } from "../../src/tools/index.js";
import { notebookDescriptor } from "../../src/tools/notebook/descriptor.js";
import { writeNb } from "../run/helpers.js";
import { testSettings } from "../settings.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "nbagent-run-plan-")));
after(() => rmSync(root, { recursive: true, force: true }));

test("a run tells its plan before its first cell and an empty plan after its last, also when an error stops it", async () => {
  const file = join(root, "plan.ipynb");
  await writeNb(file, [
    ["markdown", "# Plan"],
    ["code", "x = 1"],
    ["code", "raise ValueError('stop here')"],
    ["code", "print(x)"],
  ]);
  const toolbox = createToolbox({
    settings: testSettings(),
    cwd: root,
    runtime: { stateRoot: join(root, ".state") },
  });
  const seen: RuntimeEvent[] = [];
  toolbox.runtime.events.listen(({ seq: _s, at: _a, ...e }) => seen.push(e as RuntimeEvent));
  try {
    const r = await toolbox
      .get(notebookDescriptor)
      .execute("t", { action: "run", notebook_path: "plan.ipynb" } as never);
    assert.equal(r.isError, true);
    const ids = ["c1", "c2", "c3"];
    const order = seen
      .filter((e) => e.type === "cells-queued" || e.type === "cell-started")
      .map((e) => (e.type === "cells-queued" ? `plan ${e.cellIds.join(",")}` : `start ${e.cellId}`));
    assert.deepEqual(order, [`plan ${ids.join(",")}`, "start c1", "start c2", "plan "]);
    const plans = seen.filter((e) => e.type === "cells-queued");
    assert.ok(
      plans.every((e) => e.type === "cells-queued" && e.path === file),
      "by the file's real path",
    );
  } finally {
    await toolbox.dispose();
  }
});
