/** The per-user state directory (src/sys/state-dir.ts). */
import assert from "node:assert/strict";
import { userInfo } from "node:os";
import { test } from "node:test";
import { stateDir } from "../../src/sys/state-dir.js";

test("NBAGENT_STATE_DIR wins; blank or unset falls back to <tmp>/nbagent-<uid>", () => {
  assert.equal(stateDir({ NBAGENT_STATE_DIR: "/some/where" }, "/tmp"), "/some/where");
  assert.equal(stateDir({ NBAGENT_STATE_DIR: "  /trimmed  " }, "/tmp"), "/trimmed");
  assert.equal(stateDir({ NBAGENT_STATE_DIR: "   " }, "/t"), `/t/nbagent-${userInfo().uid}`);
  assert.equal(stateDir({}, "/t"), `/t/nbagent-${userInfo().uid}`);
});
