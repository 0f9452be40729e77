import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { findInterpreter } from "../../src/kernel/interpreter.js";

// A python3 wrapper first on PATH that logs each run, so probes can be counted.
const root = mkdtempSync(join(tmpdir(), "nbagent-interp-"));
const bin = join(root, "bin");
const log = join(root, "runs.log");
const cacheDir = join(root, "state");

function makeWrapper(): string {
  const path = join(bin, "python3");
  writeFileSync(path, `#!/bin/sh\necho run >> ${log}\nexec /usr/bin/python3 "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

const runs = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0);

describe("interpreter choice", { skip: !existsSync("/usr/bin/python3") }, () => {
  it("is remembered on disk, and probed again once the interpreter changes", async () => {
    mkdirSync(bin, { recursive: true });
    const wrapper = makeWrapper();
    const env = { PATH: `${bin}:/usr/bin:/bin` };
    const first = await findInterpreter({ env, cacheDir, cwd: join(root, "a") });
    assert.equal(first.path, wrapper);
    assert.equal(first.modules.ipykernel, true);
    const afterFirst = runs();
    assert.ok(afterFirst >= 1);
    assert.ok(existsSync(join(root, "state", "interpreter.json")));

    // Another cwd bypasses the in-process cache; the on-disk choice is reused without a probe.
    const second = await findInterpreter({ env, cacheDir, cwd: join(root, "b") });
    assert.equal(second.path, wrapper);
    assert.equal(runs(), afterFirst);

    // The interpreter file changed: probe again.
    const later = new Date(Date.now() + 5_000);
    utimesSync(wrapper, later, later);
    const third = await findInterpreter({ env, cacheDir, cwd: join(root, "c") });
    assert.equal(third.path, wrapper);
    assert.ok(runs() > afterFirst);

    // fresh (doctor) always probes.
    const before = runs();
    await findInterpreter({ env, cacheDir, cwd: join(root, "c"), fresh: true });
    assert.ok(runs() > before);
  });
});
