/**
 * The toolbox of one pi session: made on first use with pi's working directory and session file,
 * the same toolbox for every later call, and none after pi ended the session (a call that still
 * arrives then must not start kernels nobody will shut down).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionEndedError, SessionToolbox } from "../../src/pi/session-toolbox.js";
import { createToolbox, type ToolboxOptions } from "../../src/tools/index.js";

test("one toolbox per session, made with pi's cwd and session file; none once the session ended", async () => {
  const made: ToolboxOptions[] = [];
  const session = new SessionToolbox({ waitSeconds: 7 }, (options) => {
    made.push(options);
    return createToolbox(options);
  });
  assert.equal(session.started, false);
  const first = session.get({ cwd: "/tmp", sessionFile: "/tmp/pi-session.jsonl" });
  assert.equal(session.get({ cwd: "/elsewhere" }), first);
  assert.equal(made.length, 1);
  assert.equal(made[0].cwd, "/tmp");
  assert.equal(made[0].waitSeconds, 7);
  assert.equal(made[0].runtime?.sessionFile, "/tmp/pi-session.jsonl");
  assert.equal(
    first.runtime.kernelEnv({ sessionId: "default", cwd: "/tmp" }).PI_SESSION_FILE,
    "/tmp/pi-session.jsonl",
  );

  await session.end();
  assert.equal(session.started, false);
  assert.throws(() => session.get({ cwd: "/tmp" }), SessionEndedError);
  assert.equal(made.length, 1);
});
