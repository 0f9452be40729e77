// IPython kernels keep their input history in memory (src/kernel/local/backend.ts): kernels started
// together with one HOME would otherwise share one SQLite file, and IPython then writes "ERROR!
// Session/line number was not unique in database" into a cell's output. A history file the caller
// chose is kept.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createLocalBackend } from "../../src/kernel/index.js";
import { localBackendOptions } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-history-"));
after(() => rmSync(root, { recursive: true, force: true }));
const HIST = "print(get_ipython().history_manager.hist_file)";

for (const forkServer of [false, true]) {
  test(`${forkServer ? "forked" : "spawned"} kernels: history in memory unless a file is asked for`, async () => {
    const backend = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer });
    try {
      // Three starts: with a fork server the later ones are forked.
      for (let i = 0; i < 3; i++) {
        const kernel = await backend.startKernel({ cwd: root });
        assert.equal((await kernel.execute(HIST)).text, ":memory:\n");
        await kernel.shutdown();
      }
      const file = join(root, `chosen-${forkServer}.sqlite`);
      const kernel = await backend.startKernel({
        cwd: root,
        extraArguments: [`--HistoryManager.hist_file=${file}`],
      });
      assert.equal((await kernel.execute(HIST)).text, `${file}\n`);
      await kernel.shutdown();
    } finally {
      await backend.dispose();
    }
  });
}
