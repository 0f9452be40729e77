/**
 * Errors are typed values up to tools/: lower layers throw KernelStartError, SettingsError, … whose
 * messages carry no Error: prefix, and tools/types.ts (errorText, errorResult) is the one place in
 * src/ that writes it (src/kernel/README.md). The scan below keeps it that way.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createLocalBackend, KernelStartError } from "../../src/kernel/index.js";
import { SettingsError } from "../../src/runtime/index.js";
import {
  errorResult,
  errorText,
  failureText,
  isErrorText,
  unexpectedFailureText,
} from "../../src/tools/types.js";

test("the prefix is written once, whatever the message", () => {
  assert.equal(errorText("no kernelspec"), "Error: no kernelspec");
  assert.equal(errorText(errorText("no kernelspec")), "Error: no kernelspec");
  assert.ok(isErrorText(errorText("x")));
  assert.deepEqual(errorResult("bad", {}), {
    content: [{ type: "text", text: "Error: bad" }],
    details: {},
    isError: true,
  });
  assert.equal(failureText("plain"), "Error: plain");
  assert.equal(
    unexpectedFailureText("python", new Error("boom")),
    "Error: the python tool failed unexpectedly: boom",
  );
});

test("a kernel start failure is a typed value whose message tools/ turns into the Error: text", async () => {
  const backend = createLocalBackend();
  try {
    const err = await backend.startKernel({ kernelName: "no-such-kernel" }).then(
      () => assert.fail("the start should fail"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof KernelStartError);
    assert.equal(err.failure.kind, "no-such-kernelspec");
    assert.equal(err.failure.kind === "no-such-kernelspec" && err.failure.name, "no-such-kernel");
    // The message is for logs (kind and detail); the words are tools/failure-text.ts's.
    assert.match(
      err.message,
      /^kernel start failed: no-such-kernelspec \(name=no-such-kernel; available=.*python3/,
    );
    assert.match(failureText(err), /^Error: no kernelspec named "no-such-kernel"\. Available: .*python3/);
  } finally {
    await backend.dispose();
  }
  const settings = new SettingsError("NBAGENT_SANDBOX", "NBAGENT_SANDBOX=x is not one of 0, 1, net-off");
  assert.equal(failureText(settings), "Error: NBAGENT_SANDBOX=x is not one of 0, 1, net-off");
});

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (name.endsWith(".ts")) out.push(p);
  }
  return out;
}

test("only tools/types.ts writes the Error: prefix, and nothing in src/ strips it", () => {
  const src = fileURLToPath(new URL("../../src", import.meta.url));
  const writers: string[] = [];
  for (const file of sources(src)) {
    const rel = relative(src, file);
    const text = readFileSync(file, "utf8");
    text.split("\n").forEach((line, i) => {
      const writes = /["'`]Error:/.test(line) && rel !== join("tools", "types.ts");
      if (writes || /replace\(\/\^Error/.test(line)) writers.push(`${rel}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(writers, []);
});
