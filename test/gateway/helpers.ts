/**
 * Real gateway parts for tests: a jupyter_server started with a token and a root dir on a free port,
 * and a reverse proxy in front of it that can fail kernel creation and drop channel WebSockets.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GatewayBackend, type KernelBackend } from "../../src/kernel/index.js";
import { freePort } from "../../src/sys/free-ports.js";
import { TEST_PYTHON } from "../python.js";

export const SERVER_PYTHON = TEST_PYTHON;
const LIFELINE = fileURLToPath(new URL("../lifeline.mjs", import.meta.url));

export interface JupyterServerHandle {
  /** http(s)://<host>:<port> (no trailing slash, no token). */
  url: string;
  token: string;
  rootDir: string;
  /** The pid of the server's lifeline (test/lifeline.mjs), its parent. */
  pid: number;
  /** The server's log so far (stdout and stderr). */
  log(): string;
  /** SIGTERM to the server's process group (it shuts its kernels down), SIGKILL if it lingers. */
  stop(): Promise<void>;
}

export interface JupyterServerOptions {
  token?: string;
  rootDir?: string;
  /** Extra ServerApp arguments (e.g. `--ServerApp.kernel_ws_protocol=` to refuse the binary protocol). */
  args?: string[];
  /** TLS: serve https with this certificate and key. */
  certfile?: string;
  keyfile?: string;
  /** The CA that signed certfile (for the readiness check). */
  ca?: string | Buffer;
  /** Bound on the whole start (default 60 s). */
  timeoutMs?: number;
  /** A command the server runs under (e.g. bwrap arguments ending in `--`): another machine's view. */
  wrap?: string[];
  /** The address it listens on (default 127.0.0.1; a network namespace's address: test/gateway/netns.ts). */
  host?: string;
  /** Extra kernelspecs (name → kernel.json) the server offers besides the system's. */
  kernelspecs?: Record<
    string,
    { argv: string[]; display_name: string; language: string; env?: Record<string, string> }
  >;
}

/** Starts `python3 -m jupyter_server` and waits until GET /api/status answers with the token. */
export async function startJupyterServer(options: JupyterServerOptions = {}): Promise<JupyterServerHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (attempt >= 3 || !/address already in use|Errno 98/i.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce(options: JupyterServerOptions): Promise<JupyterServerHandle> {
  const token = options.token ?? randomBytes(16).toString("hex");
  const home = mkdtempSync(join(tmpdir(), "nbagent-jpserver-"));
  const rootDir = options.rootDir ?? join(home, "root");
  mkdirSync(rootDir, { recursive: true });
  const port = await freePort();
  const tls = options.certfile !== undefined;
  const host = options.host ?? "127.0.0.1";
  const url = `${tls ? "https" : "http"}://${host}:${port}`;
  for (const [name, spec] of Object.entries(options.kernelspecs ?? {})) {
    const dir = join(home, "data", "kernels", name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "kernel.json"), JSON.stringify(spec));
  }
  const logFile = join(home, "server.log");
  const logFd = openSync(logFile, "a");
  const args = [
    "-m",
    "jupyter_server",
    `--ServerApp.ip=${host}`,
    `--ServerApp.port=${port}`,
    "--ServerApp.port_retries=0",
    `--ServerApp.token=${token}`,
    "--ServerApp.open_browser=False",
    ...(process.getuid?.() === 0 ? ["--ServerApp.allow_root=True"] : []),
    `--ServerApp.root_dir=${rootDir}`,
    ...(tls ? [`--ServerApp.certfile=${options.certfile}`, `--ServerApp.keyfile=${options.keyfile}`] : []),
    ...(options.args ?? []),
  ];
  // Under test/lifeline.mjs, which ends the server when this process goes away, however it goes
  // (a runner or test killed with SIGKILL leaves no server behind). The lifeline has a process group
  // of its own: stop() signals it, and it passes the signal on to the server's group.
  const child: ChildProcess = spawn(
    process.execPath,
    [LIFELINE, ...(options.wrap ?? []), SERVER_PYTHON, ...args],
    {
      cwd: rootDir,
      detached: true,
      stdio: ["pipe", logFd, logFd],
      env: {
        ...process.env,
        JUPYTER_RUNTIME_DIR: join(home, "runtime"),
        JUPYTER_DATA_DIR: join(home, "data"),
        JUPYTER_CONFIG_DIR: join(home, "config"),
        // the server's own kernels must not inherit a test runner's NODE_OPTIONS etc. that matter here
        PYTHONUNBUFFERED: "1",
      },
    },
  );
  closeSync(logFd);
  const log = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      exited = signal ?? `exit code ${code}`;
      resolve();
    });
  });
  const handle: JupyterServerHandle = {
    url,
    token,
    rootDir,
    pid: child.pid!,
    log,
    stop: async () => {
      if (exited) return;
      // The lifeline sends the server's group SIGTERM (it shuts its kernels down), SIGKILL after 15 s.
      child.stdin?.destroy();
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        return;
      }
      await exit;
    },
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const ca = options.ca;
  while (!exited) {
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`jupyter_server did not answer /api/status within the deadline; log:\n${log()}`);
    }
    const status = await getStatus(url, token, ca);
    if (status === 200) return handle;
    await Promise.race([exit, new Promise((r) => setTimeout(r, 100))]);
  }
  throw new Error(`jupyter_server exited during its start (${exited}); log:\n${log()}`);
}

/** GET <url>/api/status with the token: the HTTP status, or 0 when nothing answered. */
function getStatus(url: string, token: string, ca?: string | Buffer): Promise<number> {
  return new Promise((resolve) => {
    const mod = url.startsWith("https:") ? https : http;
    const req = mod.get(
      `${url}/api/status`,
      { headers: { Authorization: `token ${token}` }, ca, timeout: 5000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", () => resolve(0));
    req.on("timeout", () => req.destroy());
  });
}

export interface ProxyHandle {
  url: string;
  /** How many POST /api/kernels were answered 503 by the proxy. */
  failures: number;
  /** Every request the proxy saw (method and path), WebSocket upgrades included. */
  requests: { method: string; path: string; upgrade: boolean; headers: http.IncomingHttpHeaders }[];
  /** Channel WebSockets currently piped through the proxy. */
  openChannels(): number;
  /** Closes every live channels WebSocket (both sides of the TCP connection, abruptly). */
  closeChannels(): number;
  /** While true, WebSocket upgrades are answered 503 (a gateway that is away). */
  refuseUpgrades(on: boolean): void;
  /** From now on, answer the next `n` POST /api/kernels with 503. */
  fail503(n: number): void;
  stop(): Promise<void>;
}

/**
 * An HTTP + WebSocket reverse proxy to `target` (http only) that answers 503 to the first
 * `fail503` POST /api/kernels and can drop the channels WebSockets on demand.
 */
export async function startProxy(target: string, options: { fail503?: number } = {}): Promise<ProxyHandle> {
  const t = new URL(target);
  let toFail = options.fail503 ?? 0;
  let refusing = false;
  const channels = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const sockets = new Set<net.Socket>();
  const handle: ProxyHandle = {
    url: "",
    failures: 0,
    requests: [],
    openChannels: () => channels.size,
    closeChannels: () => {
      const n = channels.size;
      for (const c of channels) {
        c.client.destroy();
        c.upstream.destroy();
      }
      channels.clear();
      return n;
    },
    refuseUpgrades: (on) => {
      refusing = on;
    },
    fail503: (n) => {
      toFail = n;
    },
    stop: async () => {
      handle.closeChannels();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    handle.requests.push({ method: req.method ?? "", path, upgrade: false, headers: req.headers });
    if (req.method === "POST" && /^\/api\/kernels\/?(\?|$)/.test(path) && toFail > 0) {
      toFail--;
      handle.failures++;
      req.resume();
      res.writeHead(503, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ message: "proxy: service unavailable (test)" }));
      return;
    }
    const up = http.request(
      {
        host: t.hostname,
        port: t.port,
        method: req.method,
        path,
        headers: { ...req.headers, host: t.host },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(up);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("upgrade", (req, client, head) => {
    const path = req.url ?? "/";
    handle.requests.push({ method: req.method ?? "", path, upgrade: true, headers: req.headers });
    if (refusing) {
      client.end("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const upstream = net.connect(Number(t.port), t.hostname, () => {
      const lines = [`${req.method} ${path} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i];
        lines.push(`${name}: ${name.toLowerCase() === "host" ? t.host : req.rawHeaders[i + 1]}`);
      }
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    const pair = { client: client as net.Socket, upstream };
    if (path.includes("/channels")) channels.add(pair);
    const end = () => {
      channels.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    upstream.on("error", end);
    upstream.on("close", end);
    client.on("error", end);
    client.on("close", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  handle.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return handle;
}

/**
 * The backend a parametrised suite runs on: NBAGENT_TEST_BACKEND=gateway → a GatewayBackend on a
 * jupyter_server started for it (stopped by dispose()); anything else → `local()`.
 */
export async function backendForTests<B extends KernelBackend>(
  local: () => B,
): Promise<B | (GatewayBackend & { server: JupyterServerHandle })> {
  if (process.env.NBAGENT_TEST_BACKEND !== "gateway") return local();
  const server = await startJupyterServer();
  const backend = new GatewayBackend({ url: server.url, token: server.token }) as GatewayBackend & {
    server: JupyterServerHandle;
  };
  backend.server = server;
  const dispose = backend.dispose.bind(backend);
  backend.dispose = async () => {
    await dispose();
    await server.stop();
  };
  return backend;
}
