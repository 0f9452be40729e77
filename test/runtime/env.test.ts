import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRuntime, Deadline, filterSecrets, secretMatcher } from "../../src/runtime/index.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-env-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("the deny-list drops credentials and keeps ordinary variables; allow lets named ones through", () => {
  const isSecret = secretMatcher({ allow: ["AWS_REGION"] });
  for (const name of [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "MY_SERVICE_TOKEN",
    "DB_PASSWORD",
    "PGPASSWORD",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "client_secret",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
  ])
    assert.equal(isSecret(name), true, name);
  for (const name of [
    "PATH",
    "HOME",
    "LANG",
    "AWS_REGION",
    "PYTHONPATH",
    "TOKENIZERS_PARALLELISM",
    "KEYBOARD",
  ])
    assert.equal(isSecret(name), false, name);
  assert.deepEqual(filterSecrets({ A: "1", X_API_KEY: "2", U: undefined }), { A: "1" });
});

test("inside the kernel: cwd, sys.path, session variables — and no host secret", async () => {
  const cwd = mkdtempSync(join(root, "cwd-"));
  const hostEnv = {
    ...process.env,
    NBAGENT_TEST_API_KEY: "sekrit-1",
    NBAGENT_TEST_PASSWORD: "sekrit-2",
    AWS_SECRET_ACCESS_KEY: "sekrit-3",
    AWS_REGION: "eu-west-1",
    NBAGENT_TEST_PLAIN: "visible",
  };
  const runtime = createRuntime({
    stateRoot: root,
    hostEnv,
    allow: ["AWS_REGION"],
    sessionFile: join(root, "s.json"),
  });
  try {
    const out = await runtime.withSession(
      { sessionId: "envtest", cwd },
      { deadline: new Deadline(60) },
      async (lease) => {
        const code = [
          "import os, sys, json",
          "print(json.dumps({'cwd': os.getcwd(), 'path0': sys.path[0],",
          " 'env': {k: os.environ.get(k) for k in ['PI_SESSION_FILE','ARTIFACTS','NBAGENT_SESSION_FILE','NBAGENT_ARTIFACTS','AWS_REGION','NBAGENT_TEST_PLAIN']},",
          " 'leaks': [k for k, v in os.environ.items() if 'sekrit' in v],",
          " 'proc_leak': 'sekrit' in open('/proc/self/environ', 'rb').read().decode('utf8', 'replace')}))",
        ].join("\n");
        let text = "";
        const r = await lease.execute(code, { onChunk: (t) => (text += t) });
        assert.equal(r.status, "ok", text);
        return JSON.parse(text);
      },
    );
    assert.equal(out.cwd, cwd);
    assert.equal(out.path0, cwd);
    const artifacts = runtime.artifacts.artifactsDir("envtest");
    assert.deepEqual(out.env, {
      PI_SESSION_FILE: join(root, "s.json"),
      ARTIFACTS: artifacts,
      NBAGENT_SESSION_FILE: join(root, "s.json"),
      NBAGENT_ARTIFACTS: artifacts,
      AWS_REGION: "eu-west-1",
      NBAGENT_TEST_PLAIN: "visible",
    });
    assert.deepEqual(out.leaks, []);
    assert.equal(out.proc_leak, false);
  } finally {
    await runtime.dispose();
  }
});
