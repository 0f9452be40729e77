/**
 * A real JupyterHub for tests (docs/backends.md "JupyterHub"): Debian's `jupyterhub` with npm's
 * configurable-http-proxy, on loopback ports of its own, the dummy authenticator and the simple
 * local-process spawner (no system users), one allowed user, and a service token with the admin
 * scopes the tests use to start and stop that user's server and to make tokens for it. The hub runs
 * under test/lifeline.mjs, so a killed test leaves nothing behind.
 *
 * The user's server starts through a small wrapper that waits for a "go" file when `gate` is set:
 * a test can hold a server in the hub's "starting" state as long as it needs, and release it. With
 * `tokenCacheSeconds` the server re-checks a token with the hub that often (a revoked token is
 * refused within that time, not the default 5 minutes).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePorts } from "../../src/sys/free-ports.js";

const LIFELINE = fileURLToPath(new URL("../lifeline.mjs", import.meta.url));
const PROXY = fileURLToPath(
  new URL("../../node_modules/configurable-http-proxy/bin/configurable-http-proxy", import.meta.url),
);

/** `jupyterhub` on PATH and the interpreter its script runs with; undefined when there is none. */
export function findHub(): { hub: string; singleuser: string } | undefined {
  try {
    const hub = execFileSync("sh", ["-c", "command -v jupyterhub"], { encoding: "utf8" }).trim();
    const singleuser = execFileSync("sh", ["-c", "command -v jupyterhub-singleuser"], {
      encoding: "utf8",
    }).trim();
    return hub && singleuser && existsSync(PROXY) ? { hub, singleuser } : undefined;
  } catch {
    return undefined;
  }
}

export interface HubHandle {
  /** http://127.0.0.1:<port> (the proxy: what users reach). */
  url: string;
  user: string;
  /** The user's server as a gateway URL: `<url>/user/<user>/`. */
  serverUrl: string;
  /** The hub's log so far. */
  log(): string;
  /** A call on the hub's REST API with the service's admin token. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }>;
  /** A new API token for the user. */
  userToken(): Promise<string>;
  /** A new API token for the user, with the id that revokes it. */
  newToken(): Promise<{ token: string; id: string }>;
  /** Revokes one of the user's tokens (DELETE …/tokens/ID); the hub's HTTP status. */
  revokeToken(id: string): Promise<number>;
  /** Releases a server start held by `gate`. */
  release(): void;
  /** Starts the user's server (released) and waits until the hub says it is ready. */
  startServer(): Promise<void>;
  /** Stops the user's server and waits until the hub has none. */
  stopServer(): Promise<void>;
  stop(): Promise<void>;
}

export interface HubOptions {
  /** Hold each start of the user's server until release() (or startServer()). */
  gate?: boolean;
  /**
   * How long the user's server trusts its last check of a token with the hub
   * (`--HubOAuth.cache_max_age`; the server's default is 300 s). At least 1: jupyterhub 3.0's
   * `_ExpiringDict` (services/auth.py) reads 0 as "cache forever".
   */
  tokenCacheSeconds?: number;
}

export async function startHub(options: HubOptions = {}): Promise<HubHandle> {
  if (options.tokenCacheSeconds !== undefined && !(options.tokenCacheSeconds >= 1))
    throw new Error("tokenCacheSeconds must be at least 1 (0 means forever to the hub)");
  const found = findHub();
  if (!found) throw new Error("jupyterhub or configurable-http-proxy is not installed");
  const home = mkdtempSync(join(tmpdir(), "nbagent-hub-"));
  const [port, apiPort, hubPort] = await freePorts(3);
  const serviceToken = randomBytes(16).toString("hex");
  const user = "alice";
  const go = join(home, "go");
  const wrapper = join(home, "singleuser.sh");
  // Waits for the go file (when gated), then becomes the single-user server.
  writeFileSync(
    wrapper,
    `#!/bin/sh\n${options.gate ? `while [ ! -e '${go}' ]; do sleep 0.05; done\n` : ""}exec '${found.singleuser}' "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  const root = process.getuid?.() === 0;
  writeFileSync(
    join(home, "config.py"),
    [
      "c = get_config()",
      `c.JupyterHub.bind_url = "http://127.0.0.1:${port}"`,
      `c.JupyterHub.hub_bind_url = "http://127.0.0.1:${hubPort}"`,
      `c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:${apiPort}"`,
      `c.ConfigurableHTTPProxy.command = ["${PROXY}"]`,
      'c.JupyterHub.authenticator_class = "dummy"',
      'c.JupyterHub.spawner_class = "simple"',
      `c.SimpleLocalProcessSpawner.home_dir_template = "${home}/{username}"`,
      `c.JupyterHub.db_url = "sqlite:///${home}/hub.sqlite"`,
      `c.JupyterHub.cookie_secret_file = "${home}/cookie_secret"`,
      `c.JupyterHub.pid_file = "${home}/hub.pid"`,
      // POST …/server answers 202 at once rather than after 10 s: the test sees the server starting.
      'c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}',
      `c.JupyterHub.services = [{"name": "tester", "api_token": "${serviceToken}"}]`,
      'c.JupyterHub.load_roles = [{"name": "tester", "services": ["tester"], "scopes": ["admin:users", "admin:servers", "tokens"]}]',
      `c.Authenticator.allowed_users = {"${user}"}`,
      `c.Spawner.cmd = ["${wrapper}"]`,
      `c.Spawner.args = ${JSON.stringify([
        ...(root ? ["--allow-root"] : []),
        ...(options.tokenCacheSeconds ? [`--HubOAuth.cache_max_age=${options.tokenCacheSeconds}`] : []),
      ])}`,
      "c.Spawner.start_timeout = 120",
      "",
    ].join("\n"),
  );
  const logFile = join(home, "hub.log");
  const logFd = openSync(logFile, "a");
  const child: ChildProcess = spawn(process.execPath, [LIFELINE, found.hub, "-f", join(home, "config.py")], {
    cwd: home,
    detached: true,
    stdio: ["pipe", logFd, logFd],
    env: { ...process.env, PYTHONUNBUFFERED: "1", JUPYTER_RUNTIME_DIR: join(home, "runtime") },
  });
  closeSync(logFd);
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exited = signal ?? `exit code ${code}`;
      resolve();
    }),
  );
  const log = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/hub/api/${path}`, {
      method,
      headers: { Authorization: `token ${serviceToken}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, json };
  };
  const servers = async () =>
    ((await api("GET", `users/${user}`)).json as { servers?: Record<string, { ready?: boolean }> }).servers ??
    {};
  /** A readiness wait on the hub's API (bounded): what it says, not time, ends it. */
  const until = async (ok: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 60_000;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`waited 60 s for ${what}; hub log:\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const handle: HubHandle = {
    url,
    user,
    serverUrl: `${url}/user/${user}/`,
    log,
    api,
    async userToken() {
      return (await handle.newToken()).token;
    },
    async newToken() {
      const r = await api("POST", `users/${user}/tokens`, { note: "nbagent test", expires_in: 3600 });
      const { token, id } = r.json as { token: string; id: string };
      return { token, id };
    },
    async revokeToken(id: string) {
      return (await api("DELETE", `users/${user}/tokens/${encodeURIComponent(id)}`)).status;
    },
    release: () => writeFileSync(go, ""),
    async startServer() {
      writeFileSync(go, "");
      const r = await api("POST", `users/${user}/server`);
      if (![201, 202, 400].includes(r.status)) throw new Error(`starting the server: HTTP ${r.status}`);
      await until(async () => (await servers())[""]?.ready === true, "the server to be ready");
    },
    async stopServer() {
      await api("DELETE", `users/${user}/server`);
      await until(async () => Object.keys(await servers()).length === 0, "the server to stop");
    },
    async stop() {
      if (exited) return;
      child.stdin?.destroy();
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        return;
      }
      await exit;
    },
  };
  // Ready when the hub's API answers through the proxy (a readiness wait, bounded).
  const deadline = Date.now() + 60_000;
  while (!exited) {
    const status = await api("GET", "").then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return handle;
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`the hub did not answer within 60 s; log:\n${log()}`);
    }
    await Promise.race([exit, new Promise((r) => setTimeout(r, 100))]);
  }
  throw new Error(`the hub exited during its start (${exited}); log:\n${log()}`);
}
