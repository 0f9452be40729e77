// What a kernel sees of folders it is kept from (docs/isolation.md, "nbagent's state hidden"), on a
// real kernel, spawned and forked:
// - a hidden folder is empty to it;
// - a working directory inside a hidden folder stays the kernel's (it reads and writes there, relative
//   and absolute paths agree), yet ".." from it does not lead into what is hidden, and a hidden folder
//   inside the working directory stays hidden.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createLocalBackend } from "../../src/kernel/index.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-confine-"));
after(() => rmSync(root, { recursive: true, force: true }));

const PROBE = `
import os, json
def ls(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return "error %d" % e.errno
def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError as e:
        return "error %d" % e.errno
with open("made-by-kernel.txt", "w") as f:
    f.write("relative")
print(json.dumps({
    "cwd": os.getcwd(),
    "here": ls("."),
    "up": ls(".."),
    "upSecret": read("../secret.txt"),
    "state": ls(STATE),
    "inner": ls("inner"),
    "absolute": read(os.path.join(os.getcwd(), "made-by-kernel.txt")),
}))
`;

import { localBackendOptions } from "../../src/runtime/settings.js";
import { testSettings } from "../settings.js";

for (const forkServer of [false, true]) {
  describe(forkServer ? "forked kernels" : "spawned kernels", () => {
    const backend = createLocalBackend({ ...localBackendOptions(testSettings()), forkServer });
    after(() => backend.dispose());

    /**
     * Starts two kernels in `cwd` (the fork server forks from its second one), runs PROBE in each and
     * hands what a confined one saw to `check`; the file the probe wrote is removed after each.
     */
    async function probeTwice(
      cwd: string,
      state: string,
      confinement: { hide: string[]; expose: string[] },
      check: (seen: Record<string, unknown>) => void,
    ): Promise<void> {
      for (let i = 0; i < 2; i++) {
        const kernel = await backend.startKernel({ cwd, confinement });
        try {
          const r = await kernel.execute(PROBE.replace("STATE", JSON.stringify(state)));
          assert.equal(r.status, "ok", r.text);
          if (!kernel.isolation?.confined) {
            assert.ok(kernel.isolation?.reason, "a kernel that is not confined says why");
            continue;
          }
          check(JSON.parse(r.text));
          assert.equal(
            readFileSync(join(cwd, "made-by-kernel.txt"), "utf8"),
            "relative",
            "written on the host",
          );
          rmSync(join(cwd, "made-by-kernel.txt"));
        } finally {
          await kernel.shutdown();
        }
      }
    }

    test("a cwd inside a hidden folder stays the kernel's; '..' and a hidden folder inside it do not show what is hidden", async () => {
      const state = mkdtempSync(join(root, "state-"));
      const cwd = join(state, "work");
      mkdirSync(join(cwd, "inner"), { recursive: true });
      writeFileSync(join(state, "secret.txt"), "the state's secret");
      writeFileSync(join(cwd, "mine.txt"), "the user's file");
      writeFileSync(join(cwd, "inner", "hidden.txt"), "hidden inside the cwd");
      const confinement = { hide: [state, join(cwd, "inner")], expose: [] };
      await probeTwice(cwd, state, confinement, (seen) => {
        assert.equal(seen.cwd, cwd);
        assert.deepEqual(seen.here, ["inner", "made-by-kernel.txt", "mine.txt"]);
        assert.equal(seen.absolute, "relative", "relative and absolute paths reach the same file");
        assert.deepEqual(seen.up, ["work"], "'..' shows only the way back to the cwd");
        assert.equal(seen.upSecret, "error 2");
        assert.deepEqual(seen.state, ["work"]);
        assert.deepEqual(seen.inner, []);
      });
    });

    test("a cwd that is the hidden folder itself: the kernel starts (it sees its connection file) and works there; the folders hidden inside stay hidden", async () => {
      // The state directory as the working directory (NBAGENT_STATE_DIR=. in a project): putting the
      // whole folder back once brought its cover along, so the kernel saw no connection file, picked
      // ports of its own and never answered (a 40 s stall, then a failed start).
      const state = mkdtempSync(join(root, "state-"));
      mkdirSync(join(state, "inner"));
      writeFileSync(join(state, "inner", "hidden.txt"), "hidden inside the cwd");
      writeFileSync(join(state, "mine.txt"), "the user's file");
      const confinement = { hide: [state, join(state, "inner")], expose: [] };
      await probeTwice(state, state, confinement, (seen) => {
        assert.equal(seen.cwd, state);
        assert.deepEqual(seen.here, ["inner", "made-by-kernel.txt", "mine.txt"]);
        assert.deepEqual(seen.inner, [], "a hidden folder inside the cwd stays hidden");
      });
    });
  });
}
