/**
 * Every kind of kernel start failure has its words in tools/failure-text.ts (the switch there is
 * the compile-time proof), and they are the sentences the kernel layer used to put in its errors'
 * messages: the model reads the same text. The errors' own messages are for logs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type GatewayFailure,
  KernelStartError,
  type KernelStartFailure,
  restartFailedDeath,
} from "../../src/kernel/errors.js";
import { KernelGoneError } from "../../src/kernel/gateway/provisioner.js";
import { GatewayHttpError, GatewayUnreachableError } from "../../src/kernel/gateway/rest.js";
import { CallTimeoutError } from "../../src/runtime/deadline.js";
import { SlotWaitTimeoutError } from "../../src/runtime/errors.js";
import {
  callTimeoutText,
  describeFailure,
  gatewayFailureText,
  startFailureText,
} from "../../src/tools/failure-text.js";
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
    deathReasonText("restart failed", {
      kind: "restart-failed",
      failure: { kind: "ended-in-restart", reason: "exit code 1" },
    }),
    "restart failed: the kernel ended during its restart (exit code 1)",
  );
  const stalled = new KernelStartError({ kind: "stalled", ms: 900 });
  stalled.output = "mute";
  assert.equal(
    deathReasonText(
      restartFailedDeath("restart failed", stalled).reason,
      restartFailedDeath("restart failed", stalled).cause,
    ),
    "restart failed: the kernel said nothing within 900 ms of its start; its output:\nmute",
  );
  assert.deepEqual(restartFailedDeath("restart failed", new Error("boom")), {
    reason: "restart failed: boom",
  });
  assert.equal(
    deathReasonText("kernel process ended: exit code 9", undefined),
    "kernel process ended: exit code 9",
  );
});

test("the call's deadline is worded in tools/; other errors by their message", () => {
  assert.equal(callTimeoutText(30), "Command timed out after 30 seconds");
  assert.equal(describeFailure(new CallTimeoutError(0.05)), "Command timed out after 0.05 seconds");
  assert.equal(new CallTimeoutError(0.05).message, "call deadline passed: 0.05 s");
  assert.equal(
    describeFailure(new SlotWaitTimeoutError(2, 4, [])),
    "Command timed out after 2 seconds while waiting for a free kernel slot (all 4 busy)",
  );
  assert.equal(describeFailure(new Error("plain")), "plain");
  assert.equal(describeFailure("text"), "text");
});

const G = "http://127.0.0.1:8888";

/** Each gateway failure with the sentence the gateway client's errors used to carry. */
const GATEWAY_WORDS: [GatewayFailure, string][] = [
  [
    { kind: "unreachable", gateway: G, request: "POST /api/kernels", why: "cancelled" },
    `POST /api/kernels to the gateway at ${G} was cancelled`,
  ],
  [
    { kind: "unreachable", gateway: G, request: "GET /api/kernels", why: "timeout", ms: 30000 },
    `the gateway at ${G} did not answer GET /api/kernels within 30000 ms`,
  ],
  [
    { kind: "unreachable", gateway: G, request: "GET /api/kernels", why: "connect-timeout", ms: 10000 },
    `could not connect to the gateway at ${G} within 10000 ms`,
  ],
  [
    {
      kind: "unreachable",
      gateway: G,
      request: "GET /api/kernels",
      why: "network",
      cause: "connect ECONNREFUSED 127.0.0.1:8888",
      code: "ECONNREFUSED",
    },
    `could not reach the gateway at ${G} (GET /api/kernels): connect ECONNREFUSED 127.0.0.1:8888`,
  ],
  [
    {
      kind: "unreachable",
      gateway: G,
      request: "GET /api/kernels",
      why: "network",
      cause: "socket hang up",
      code: "ECONNRESET",
    },
    `could not reach the gateway at ${G} (GET /api/kernels): socket hang up (ECONNRESET)`,
  ],
  [
    { kind: "refused", gateway: G, request: "POST /api/kernels", status: 403, statusText: "Forbidden" },
    `the gateway at ${G} answered POST /api/kernels with HTTP 403 Forbidden (the token was missing or refused)`,
  ],
  [
    {
      kind: "refused",
      gateway: G,
      request: "POST /api/kernels",
      status: 503,
      statusText: "Service Unavailable",
      said: "proxy: service unavailable (test)",
      firstStatus: 503,
    },
    `the gateway at ${G} answered POST /api/kernels with HTTP 503 Service Unavailable: proxy: service unavailable (test) (tried twice: the first attempt got HTTP 503 too)`,
  ],
  [
    {
      kind: "refused",
      gateway: G,
      request: "GET /api/kernels/k/channels",
      status: 503,
      statusText: "Service Unavailable",
      websocket: true,
    },
    `the gateway at ${G} refused the kernel's WebSocket (GET /api/kernels/k/channels): HTTP 503 Service Unavailable`,
  ],
  [
    { kind: "gone", gateway: G, kernelId: "k1", seen: "attach" },
    `the gateway at ${G} has no kernel k1 (it was shut down or culled)`,
  ],
  [
    { kind: "gone", gateway: G, kernelId: "k1", seen: "restart" },
    `the gateway at ${G} says kernel k1 no longer exists`,
  ],
];

function gatewayError(f: GatewayFailure): Error {
  if (f.kind === "unreachable") return new GatewayUnreachableError(f, "GET", "/api/kernels");
  if (f.kind === "refused") return new GatewayHttpError(f, "POST", "/api/kernels", "{}");
  return new KernelGoneError(f);
}

test("every gateway failure is worded in tools/, as the gateway client's errors said it before", () => {
  const kinds = new Set<string>();
  for (const [failure, words] of GATEWAY_WORDS) {
    kinds.add(failure.kind);
    assert.equal(gatewayFailureText(failure), words);
    const err = gatewayError(failure);
    assert.equal(describeFailure(err), words);
    assert.equal(failureText(err), `Error: ${words}`);
    assert.ok(err.message.startsWith(`gateway `), err.message);
    assert.ok(!err.message.includes("the gateway at"), err.message);
  }
  assert.deepEqual([...kinds].sort(), ["gone", "refused", "unreachable"]);
});

test("an HTTP error tried twice keeps its answer and adds the first status", () => {
  const first = new GatewayHttpError(
    {
      kind: "refused",
      gateway: G,
      request: "POST /api/kernels",
      status: 500,
      statusText: "Internal Server Error",
    },
    "POST",
    "/api/kernels",
    "Too many open files",
  );
  const again = first.triedTwice(500);
  assert.equal(again.status, 500);
  assert.equal(again.body, "Too many open files");
  assert.equal(
    describeFailure(again),
    `the gateway at ${G} answered POST /api/kernels with HTTP 500 Internal Server Error (tried twice: the first attempt got HTTP 500 too)`,
  );
});

test("a gateway that stayed unreachable: its last failure follows the kernel layer's reason", () => {
  assert.equal(
    deathReasonText(`the gateway at ${G} stayed unreachable for 5 s after the kernel's connection was lost`, {
      kind: "unreachable",
      last: GATEWAY_WORDS[3][0],
    }),
    `the gateway at ${G} stayed unreachable for 5 s after the kernel's connection was lost (last: ${GATEWAY_WORDS[3][1]})`,
  );
});
