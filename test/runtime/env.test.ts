import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { allowFromEnv, buildKernelEnv, nameParts, splitSecrets } from "../../src/runtime/env.js";
import { createRuntime, Deadline, filterSecrets, secretMatcher } from "../../src/runtime/index.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-env-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Names that look like secrets: withheld whatever their value. */
const WITHHELD_NAMES = [
  // the list (issue 10, item 2)
  "API_KEY",
  "TOKEN",
  "MYSQL_PWD",
  "PGPASS",
  "NGROK_AUTHTOKEN",
  "KAGGLE_KEY",
  "PRIVATE_KEY",
  "GH_PAT",
  "DOCKER_AUTH_CONFIG",
  "SESSION_KEY",
  "JWT",
  "npm_config__authToken",
  "npm_config__auth",
  // vendors and common spellings
  "OPENAI_API_KEY",
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "GITLAB_TOKEN",
  "CI_JOB_TOKEN",
  "ACTIONS_RUNTIME_TOKEN",
  "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
  "HF_TOKEN",
  "HUGGING_FACE_HUB_TOKEN",
  "NPM_TOKEN",
  "NODE_AUTH_TOKEN",
  "PYPI_API_TOKEN",
  "TWINE_PASSWORD",
  "MY_SERVICE_TOKEN",
  "DB_PASSWORD",
  "DB_PASS",
  "SMTP_PASSWD",
  "PGPASSWORD",
  "POSTGRES_PASSWORD_FILE",
  "PASSWORD2",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AZURE_CLIENT_SECRET",
  "AZURE_STORAGE_CONNECTION_STRING",
  "AZURE_STORAGE_KEY",
  "AZURE_DEVOPS_PAT",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GCP_SERVICE_ACCOUNT_KEY",
  "STRIPE_SECRET_KEY",
  "TWILIO_AUTH_TOKEN",
  "SENDGRID_API_KEY",
  "SLACK_BOT_TOKEN",
  "SLACK_WEBHOOK_URL",
  "DISCORD_WEBHOOK_URL",
  "NEW_RELIC_LICENSE_KEY",
  "SECRET_KEY_BASE",
  "DJANGO_SECRET_KEY",
  "JWT_SECRET",
  "SUPABASE_JWT",
  "SESSION_COOKIE",
  "client_secret",
  "apiKey",
  "openaiApiKey",
  "accessToken",
  "OPENAI_APIKEY",
  "SENTRY_DSN",
  "PG_DSN",
  "DATABASE_URL",
  "PROD_DATABASE_URL",
  "REDIS_URL",
  "MONGODB_URI",
  "SSH_AUTH_SOCK",
  "GPG_AGENT_INFO",
  "BASIC_AUTH",
  "VAULT_TOKEN",
  "SIGNING_KEY",
  "ENCRYPTION_KEY",
];

/** Ordinary variables of a dev machine or CI runner: they must reach the kernel. */
const PASSING_NAMES = [
  "PATH",
  "PWD",
  "OLDPWD",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "SHLVL",
  "LANG",
  "LC_ALL",
  "TERM",
  "TZ",
  "TMPDIR",
  "EDITOR",
  "PAGER",
  "DISPLAY",
  "SSH_TTY",
  "SSH_CONNECTION",
  "XDG_SESSION_ID",
  "XDG_SESSION_TYPE",
  "XDG_RUNTIME_DIR",
  "DBUS_SESSION_BUS_ADDRESS",
  "KEYBOARD",
  "XKB_DEFAULT_LAYOUT",
  "GPG_KEY",
  "PYTHONPATH",
  "PYTHONHASHSEED",
  "PYTHONUNBUFFERED",
  "PYTHONDONTWRITEBYTECODE",
  "VIRTUAL_ENV",
  "CONDA_PREFIX",
  "TOKENIZERS_PARALLELISM",
  "HF_HOME",
  "TRANSFORMERS_CACHE",
  "MAX_TOKENS",
  "OPENAI_MAX_TOKENS",
  "OPENAI_BASE_URL",
  "OPENAI_ORG_ID",
  "ANTHROPIC_BASE_URL",
  "JUPYTER_PATH",
  "JUPYTER_CONFIG_DIR",
  "JUPYTER_PLATFORM_DIRS",
  "JPY_PARENT_PID",
  "MPLBACKEND",
  "MPLCONFIGDIR",
  "CUDA_VISIBLE_DEVICES",
  "CUDA_HOME",
  "NVIDIA_VISIBLE_DEVICES",
  "OMP_NUM_THREADS",
  "OPENBLAS_CORETYPE",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_PROFILE",
  "AWS_CA_BUNDLE",
  "REQUESTS_CA_BUNDLE",
  "SSL_CERT_FILE",
  "NODE_EXTRA_CA_CERTS",
  "PIP_CERT",
  "PIP_INDEX_URL",
  "PIP_DISABLE_PIP_VERSION_CHECK",
  "TOX_TESTENV_PASSENV",
  "PASSTHROUGH",
  "COMPASS_HOME",
  "BYPASS_CACHE",
  "OS_AUTH_URL",
  "AUTH_TYPE",
  "TOKEN_URL",
  "ACTIONS_ID_TOKEN_REQUEST_URL",
  "GIT_CREDENTIAL_HELPER",
  "SORT_KEY",
  "MONKEY_PATCH",
  "PATTERN",
  "CI",
  "GITHUB_ACTIONS",
  "GITHUB_REPOSITORY",
  "GITHUB_SHA",
  "GITHUB_WORKSPACE",
  "RUNNER_OS",
  "RUNNER_TEMP",
  "DEBIAN_FRONTEND",
  "HOSTNAME",
  "NODE_ENV",
  "NODE_OPTIONS",
  "npm_config_cache",
  "npm_lifecycle_event",
  "INIT_CWD",
  "COLORTERM",
  "LS_COLORS",
  "HTTP_PROXY",
  "NO_PROXY",
];

test("names: the part rules withhold every secret-looking name and pass ordinary ones", () => {
  const isSecret = secretMatcher();
  const missed = WITHHELD_NAMES.filter((name) => !isSecret(name, "x"));
  const blocked = PASSING_NAMES.filter((name) => isSecret(name, "x"));
  assert.deepEqual({ missed, blocked }, { missed: [], blocked: [] });
});

test("names are split on _ - . and camelCase humps", () => {
  assert.deepEqual(nameParts("npm_config__authToken"), ["npm", "config", "auth", "token"]);
  assert.deepEqual(nameParts("JWTToken"), ["jwt", "token"]);
  assert.deepEqual(nameParts("my-app.apiKey2"), ["my", "app", "api", "key"]);
});

test("values: a URL with a password, a secret query parameter or a known token shape is withheld whatever the name", () => {
  const isSecret = secretMatcher();
  const withheld: [string, string][] = [
    ["POSTGRES_URL", "postgres://u:p@h/db"],
    ["HTTPS_PROXY", "http://user:pw@proxy.example:3128"],
    ["HTTP_PROXY", "http://user:pw@proxy.example:3128/"],
    ["PIP_INDEX_URL", "https://u:tok@pypi.example/simple"],
    ["PIP_EXTRA_INDEX_URL", "https://pypi.org/simple https://__token__:abc@pypi.example/simple"],
    ["UV_INDEX", "https://oauth2:glpat-xyz@gitlab.example/api/v4/projects/1/packages/pypi/simple"],
    ["MY_DB", "mysql://root:hunter2@localhost:3306/app"],
    ["BLOB", "https://acct.blob.core.windows.net/c?sv=2022&sig=abcDEF%3D"],
    ["ENDPOINT", "https://api.example.com/v1?api_key=abc123"],
    ["LINK", "https://example.com/hook?access_token=abc123"],
    ["S3_LINK", "https://b.s3.amazonaws.com/k?X-Amz-Signature=abc"],
    ["SOMETHING", "ghp_0123456789abcdefghijABCDEFGHIJ012345"],
    ["SOMETHING", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"],
    ["SOMETHING", "sk-proj-abcdefghijklmnopqrstuvwxyz012345"],
    ["SOMETHING", "xoxb-1234567890-abcdefghij"],
    ["SOMETHING", "AKIAIOSFODNN7EXAMPLE"],
    ["SOMETHING", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"],
    ["SOMETHING", "AIzaSyA-abcdefghijklmnopqrstuvwxyz012345"],
    [
      "SOMETHING",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
    ["SOMETHING", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----"],
    ["HEADERS", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz"],
    ["PG_CONN", "host=db.example user=app password=hunter2 dbname=app"],
    ["JAVA_TOOL_OPTIONS", "-Dhttps.proxyHost=p -Dhttps.proxyPassword=hunter2"],
    ["TOOL_ARGS", "--verbose --token=abc123"],
    ["GIT_REMOTE", "https://ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r.git"],
  ];
  const passing: [string, string][] = [
    ["HTTPS_PROXY", "http://proxy.example:3128"],
    ["GIT_REMOTE", "ssh://git@github.com/o/r.git"],
    ["PIP_INDEX_URL", "https://user@pypi.example/simple"],
    ["PIP_INDEX_URL", "https://pypi.org/simple?page=2"],
    ["EMPTY_PASSWORD_URL", "ftp://anonymous:@ftp.example/"],
    ["ADDR", "[::1]:8080"],
    ["LS_COLORS", "rs=0:di=01;34:ln=01;36:*.tar=01;31:*.desk=00;35"],
    ["DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"],
    ["PATH", "/usr/local/bin:/usr/bin:/bin"],
    ["DESC", "risk-assessment-of-the-quarterly-numbers"],
    ["GPG_KEY", "A035C8C19219BA821ECEA86B64E628F8D684696D"],
    ["NODE_OPTIONS", "--max-old-space-size=4096 --enable-source-maps"],
    ["MAKEFLAGS", "-j4 V=1"],
    ["PG_CONN", "host=db.example user=app dbname=app"],
    ["PYTEST_ADDOPTS", "-p no:cacheprovider --tb=short"],
  ];
  assert.deepEqual(
    withheld.filter(([n, v]) => !isSecret(n, v)),
    [],
  );
  assert.deepEqual(
    passing.filter(([n, v]) => isSecret(n, v)),
    [],
  );
});

test("allow (option or NBAGENT_ALLOW_ENV, names or globs) lets a variable through; the rest is reported by name", () => {
  const host = {
    A: "1",
    X_API_KEY: "2",
    U: undefined,
    KAGGLE_KEY: "k",
    KAGGLE_USERNAME: "me",
    HTTPS_PROXY: "http://u:pw@proxy:3128",
    GH_PAT: "p",
    NBAGENT_ALLOW_ENV: " KAGGLE_*, ,https_proxy ",
  };
  assert.deepEqual(filterSecrets({ A: "1", X_API_KEY: "2", U: undefined }), { A: "1" });
  assert.deepEqual(splitSecrets(host, { allow: ["GH_PAT"] }), {
    env: {
      A: "1",
      KAGGLE_KEY: "k",
      KAGGLE_USERNAME: "me",
      HTTPS_PROXY: "http://u:pw@proxy:3128",
      GH_PAT: "p",
      NBAGENT_ALLOW_ENV: " KAGGLE_*, ,https_proxy ",
    },
    withheld: ["X_API_KEY"],
  });
  assert.deepEqual(splitSecrets({ ...host, NBAGENT_ALLOW_ENV: "" }).withheld, [
    "GH_PAT",
    "HTTPS_PROXY",
    "KAGGLE_KEY",
    "X_API_KEY",
  ]);
  assert.deepEqual(allowFromEnv({ NBAGENT_ALLOW_ENV: "A,,B*" }), ["A", "B*"]);
  // deny adds name globs
  assert.deepEqual(splitSecrets({ A: "1", MY_INTERNAL: "2" }, { deny: ["MY_*"] }).withheld, ["MY_INTERNAL"]);
});

test("a kernel's env: withheld names are reported, a host extra of the same name is not", () => {
  const built = buildKernelEnv({
    hostEnv: { PATH: "/bin", API_KEY: "s", TOKEN: "t" },
    extra: { TOKEN: "chosen-by-the-host" },
    sessionFile: "/s.json",
    artifactsDir: "/a",
  });
  assert.deepEqual(built.withheld, ["API_KEY"]);
  assert.equal(built.env.TOKEN, "chosen-by-the-host");
  assert.equal("API_KEY" in built.env, false);
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
    stateRoot: join(root, "state"),
    settings: testSettings(hostEnv),
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
