/**
 * Every kind of kernel start failure has its words in tools/failure-text.ts (the switch there is
 * the compile-time proof), and they are the sentences the kernel layer used to put in its errors'
 * messages: the model reads the same text. The errors' own messages are for logs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KernelStartError, type KernelStartFailure } from "../../src/kernel/errors.js";
import { CallTimeoutError } from "../../src/runtime/deadline.js";
import { callTimeoutText, describeFailure, startFailureText } from "../../src/tools/failure-text.js";
import { deathReasonText } from "../../src/tools/kernel-text.js";
import { failureText, unexpectedFailureText } from "../../src/tools/types.js";

/** Each kind (and each fork-server case) with the sentence the model read before the words moved. */
const WORDS: [KernelStartFailure, string][] = [
  [{ kind: "exited", reason: "exit code 3" }, "the kernel exited during startup (exit code 3)"],
  [
    { kind: "exited", reason: "signal SIGKILL", stderrTail: "boom" },
    "the kernel exited during startup (signal SIGKILL):\nboom",
  ],
  [{ kind: "ended-in-restart", reason: "exit code 1" }, "the kernel ended during its restart (exit code 1)"],
  [{ kind: "stalled", ms: 1500 }, "the kernel said nothing within 1500 ms of its start"],
  [
    { kind: "no-such-kernelspec", name: "nope", available: ["ir", "python3"] },
    'no kernelspec named "nope". Available: ir, python3. Use one of these names.',
  ],
  [
    { kind: "no-such-kernelspec", name: "nope", available: [], gateway: "http://h:8888" },
    'the gateway at http://h:8888 has no kernelspec "nope" (it has: none)',
  ],
  [{ kind: "cancelled" }, "kernel start was cancelled"],
  [{ kind: "shut-down" }, "the kernel was shut down; start a new one"],
  [
    { kind: "no-cwd", cwd: "/w/x" },
    "the kernel's working directory /w/x does not exist; create it or pass another cwd",
  ],
  [{ kind: "cannot-attach", backend: "local" }, "the local backend cannot attach to kernels"],
  [
    { kind: "no-sandbox", why: "bwrap is not installed" },
    "the sandbox was asked for, but bwrap is not installed",
  ],
  [
    { kind: "no-id", gateway: "http://h:8888" },
    "the gateway at http://h:8888 created a kernel but sent no id",
  ],
  [
    { kind: "fork-server", what: "exited", detail: "exit code 1", stderrTail: "Traceback" },
    "the kernel fork server exited (exit code 1):\nTraceback",
  ],
  [
    { kind: "fork-server", what: "unsafe", detail: "threads running" },
    "the kernel fork server is not safe to fork: threads running",
  ],
  [
    { kind: "fork-server", what: "fatal", detail: "ImportError: x" },
    "the kernel fork server could not start:\nImportError: x",
  ],
  [{ kind: "fork-server", what: "refused", detail: "bad spec" }, "the kernel fork server refused: bad spec"],
  [{ kind: "fork-server", what: "not-running" }, "the kernel fork server is not running"],
  [{ kind: "no-port" }, "could not get a free port"],
];

test("every kernel start failure is worded in tools/, as the model read it before", () => {
  const kinds = new Set<string>();
  for (const [failure, words] of WORDS) {
    kinds.add(failure.kind);
    assert.equal(startFailureText(failure), words);
    const err = new KernelStartError(failure);
    assert.equal(describeFailure(err), words);
    assert.equal(failureText(err), `Error: ${words}`);
    assert.equal(
      unexpectedFailureText("python", err),
      `Error: the python tool failed unexpectedly: ${words}`,
    );
    // The error's own message is a statement for logs: the kind, and no words for the model.
    assert.ok(err.message.startsWith(`kernel start failed: ${failure.kind}`), err.message);
  }
  assert.deepEqual([...kinds].sort(), [
    "cancelled",
    "cannot-attach",
    "ended-in-restart",
    "exited",
    "fork-server",
    "no-cwd",
    "no-id",
    "no-port",
    "no-sandbox",
    "no-such-kernelspec",
    "shut-down",
    "stalled",
  ]);
});

test("the output of a kernel that was still running when its start failed follows the words", () => {
  const err = new KernelStartError({ kind: "stalled", ms: 1500 });
  err.output = "mute kernel here";
  assert.equal(
    describeFailure(err),
    "the kernel said nothing within 1500 ms of its start; its output:\nmute kernel here",
  );
});

test("a failed restart's failure is worded after the reason the kernel layer gives", () => {
  assert.equal(
    deathReasonText("restart failed", { kind: "ended-in-restart", reason: "exit code 1" }),
    "restart failed: the kernel ended during its restart (exit code 1)",
  );
  assert.equal(
    deathReasonText("kernel process ended: exit code 9", undefined),
    "kernel process ended: exit code 9",
  );
});

test("the call's deadline is worded in tools/; other errors by their message", () => {
  assert.equal(callTimeoutText(30), "Command timed out after 30 seconds");
  assert.equal(describeFailure(new CallTimeoutError(0.05)), "Command timed out after 0.05 seconds");
  assert.equal(describeFailure(new Error("plain")), "plain");
  assert.equal(describeFailure("text"), "text");
});
