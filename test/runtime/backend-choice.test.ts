/**
 * The kernel choice, made once from options and environment (docs/backends.md): remote gateway by
 * NBAGENT_GATEWAY_URL + NBAGENT_GATEWAY_TOKEN or the gateway option, the shared gateway for "shared"
 * or a named session with no gateway configured, else local kernels; bad settings are an Error: when
 * the runtime is created, before anything starts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRuntime, type Runtime } from "../../src/runtime/index.js";
import { planKernelChoice } from "../../src/runtime/kernel-choice.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-choice-"));
const runtimes: Runtime[] = [];
after(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()));
  rmSync(root, { recursive: true, force: true });
});

function runtime(options: Partial<Parameters<typeof createRuntime>[0]>): Runtime {
  const r = createRuntime({
    settings: testSettings(),
    stateRoot: join(root, "state"),
    artifactMaxAgeMs: 0,
    ...options,
  });
  runtimes.push(r);
  return r;
}

test("NBAGENT_GATEWAY_URL and NBAGENT_GATEWAY_TOKEN choose the remote gateway", () => {
  const plan = planKernelChoice({
    settings: testSettings({
      NBAGENT_GATEWAY_URL: " https://gw.example:8888/base/ ",
      NBAGENT_GATEWAY_TOKEN: "t0k",
    }),
  });
  assert.deepEqual(plan, {
    kind: "remote",
    connection: { url: "https://gw.example:8888/base", token: "t0k" },
    kernelName: "python3",
  });
  // a named session on a configured gateway stays there
  assert.equal(
    planKernelChoice({ sessionName: "s", settings: testSettings({ NBAGENT_GATEWAY_URL: "http://h:1" }) })
      .kind,
    "remote",
  );
});

test("the gateway option wins over the environment; 'shared' is the shared local gateway", () => {
  const env = { NBAGENT_GATEWAY_URL: "http://env:1", NBAGENT_GATEWAY_TOKEN: "e" };
  assert.deepEqual(
    planKernelChoice({ gateway: { url: "http://opt:2", token: "o" }, settings: testSettings(env) }),
    {
      kind: "remote",
      connection: { url: "http://opt:2", token: "o" },
      kernelName: "python3",
    },
  );
  assert.deepEqual(
    planKernelChoice({ gateway: "shared", python: "/usr/bin/python3", settings: testSettings(env) }),
    {
      kind: "shared",
      python: "/usr/bin/python3",
      kernelName: "python3",
    },
  );
});

test("a named session with no gateway configured uses the shared local gateway; else kernels are local", () => {
  assert.deepEqual(
    planKernelChoice({ sessionName: "s", settings: testSettings({ NBAGENT_PYTHON: "/usr/bin/python3" }) }),
    {
      kind: "shared",
      python: "/usr/bin/python3",
      kernelName: "python3",
    },
  );
  assert.deepEqual(planKernelChoice({ kernelName: "k", settings: testSettings({}) }), {
    kind: "local",
    python: undefined,
    kernelName: "k",
  });
});

test("a bad gateway URL is a SettingsError when the settings are resolved (an option's: at createRuntime), naming where it came from", () => {
  const fromEnv = (url: string) => () => testSettings({ NBAGENT_GATEWAY_URL: url });
  const cases: [() => unknown, RegExp][] = [
    [
      fromEnv("gw.example:8888"),
      /^NBAGENT_GATEWAY_URL must be an http:\/\/ or https:\/\/ URL \(got "gw\.example:8888"\)\. Give the gateway's base URL, e\.g\. http:\/\/host:8888\.$/,
    ],
    [
      fromEnv("not a url"),
      /^NBAGENT_GATEWAY_URL is not a URL: "not a url"\. Give the gateway's base URL, e\.g\. http:\/\/host:8888\.$/,
    ],
    [
      () =>
        createRuntime({
          settings: testSettings({}),
          stateRoot: join(root, "state"),
          gateway: { url: "ftp://h/" },
        }),
      /^the gateway URL must be an http:\/\/ or https:\/\/ URL \(got "ftp:\/\/h\/"\)/,
    ],
    [
      fromEnv("http://u:secret@h:1"),
      /^NBAGENT_GATEWAY_URL must not carry credentials in the URL; put the token in NBAGENT_GATEWAY_TOKEN\.$/,
    ],
    [
      fromEnv("http://h:1/?token=abc"),
      /^NBAGENT_GATEWAY_URL must be the gateway's base URL without a query or fragment/,
    ],
  ];
  for (const [make, message] of cases) assert.throws(make, { name: "SettingsError", message });
});

test("local kernels: no named sessions; the python tool's session names an in-process session", async () => {
  const r = runtime({ settings: testSettings({}) });
  assert.equal(r.facts.namedSessions, false);
  assert.equal(r.choice.kind, "local");
  assert.equal(r.namedSessionFor("s", true), undefined);
  assert.deepEqual(r.choice, { kind: "local", python: undefined, kernelName: "python3" });
  await assert.rejects(r.namedSessions.list(), {
    name: "SettingsError",
    message:
      "named sessions need a gateway (NBAGENT_GATEWAY_URL, --gateway URL, or the shared local gateway)",
  });
});

test("on a gateway, the caller's named session and the runtime's sessionName are named; the default is not", () => {
  const r = runtime({
    settings: testSettings({ NBAGENT_GATEWAY_URL: "http://127.0.0.1:9" }),
    sessionName: "work",
  });
  assert.equal(r.facts.namedSessions, true);
  assert.equal(r.defaultSessionId, "work");
  assert.equal(r.namedSessionFor("work", false), "work");
  assert.equal(r.namedSessionFor("other", true), "other");
  assert.equal(r.namedSessionFor("default", false), undefined);
});

test("NBAGENT_KERNEL names the default kernelspec; NBAGENT_START_SECONDS bounds a start; bad values are an Error: naming them", () => {
  assert.equal(
    planKernelChoice({ settings: testSettings({ NBAGENT_KERNEL: " python_kubernetes " }) }).kernelName,
    "python_kubernetes",
  );
  // an explicit kernelName (the runtime's option) wins
  assert.equal(
    planKernelChoice({ kernelName: "ir", settings: testSettings({ NBAGENT_KERNEL: "python_kubernetes" }) })
      .kernelName,
    "ir",
  );
  assert.equal(planKernelChoice({ settings: testSettings({}) }).kernelName, "python3");
  assert.equal(testSettings({}).startTimeoutMs, 60_000);
  assert.equal(testSettings({ NBAGENT_START_SECONDS: "300" }).startTimeoutMs, 300_000);
  for (const [env, message] of [
    [
      { NBAGENT_KERNEL: "python 3" },
      `NBAGENT_KERNEL must be a kernelspec name (letters, digits, '.', '_', '-'), got "python 3"`,
    ],
    [
      { NBAGENT_START_SECONDS: "0" },
      `NBAGENT_START_SECONDS must be a number of seconds greater than 0, got "0"`,
    ],
    [
      { NBAGENT_START_SECONDS: "soon" },
      `NBAGENT_START_SECONDS must be a number of seconds greater than 0, got "soon"`,
    ],
  ] as const)
    assert.throws(() => testSettings(env), { name: "SettingsError", message });
});
