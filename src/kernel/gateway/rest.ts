/**
 * A small REST client for a Jupyter server / Enterprise Gateway: `Authorization: token <t>`, extra
 * headers, a private CA for https, a bound on connecting and one on the whole request. Failures are
 * typed values (GatewayFailure) that name the gateway's URL, never the token; tools/failure-text.ts
 * words them (docs/backends.md).
 */
import http from "node:http";
import https from "node:https";
import { failureStatement, type GatewayFailure, type HubServerState, KernelFailureError } from "../errors.js";
import { HUB_HEADER, hubOf, hubServerState, waitForHubServer } from "./hub.js";

export interface GatewayOptions {
  /** http(s)://host:port[/base] */
  url: string;
  /** Sent as `Authorization: token <t>`. */
  token?: string;
  /** Extra headers on every request and on the WebSocket. */
  headers?: Record<string, string>;
  /** PEM of a private CA for https/wss. */
  ca?: string | Buffer;
  /** Bound on opening a TCP/TLS connection or re-opening a kernel's WebSocket (default 10 s). */
  connectTimeoutMs?: number;
  /** Bound on one REST call (default 30 s). */
  requestTimeoutMs?: number;
  /**
   * Bound on POST /api/kernels, the kernel's first WebSocket handshake (the server holds it until the
   * kernel has started) and its first kernel_info (default 60 s; cluster kernels need more).
   */
  launchTimeoutMs?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_LAUNCH_TIMEOUT_MS = 60_000;

/** The gateway answered with an HTTP error status; `body` is its whole answer. `message` is for logs. */
export class GatewayHttpError extends KernelFailureError {
  readonly status: number;
  constructor(
    readonly failure: Extract<GatewayFailure, { kind: "refused" }>,
    readonly method: string,
    readonly path: string,
    readonly body: string,
  ) {
    super(failureStatement("gateway request failed", failure));
    this.name = "GatewayHttpError";
    this.status = failure.status;
  }

  /** The same answer, after a first attempt that got `firstStatus` too. */
  triedTwice(firstStatus: number): GatewayHttpError {
    return new GatewayHttpError({ ...this.failure, firstStatus }, this.method, this.path, this.body);
  }
}

/**
 * The gateway could not be reached (refused, reset, DNS, TLS, timeout): no HTTP status at all.
 * `message` is for logs (it keeps the network error's text).
 */
export class GatewayUnreachableError extends KernelFailureError {
  readonly code?: string;
  constructor(
    readonly failure: Extract<GatewayFailure, { kind: "unreachable" }>,
    readonly method: string,
    readonly path: string,
  ) {
    super(failureStatement("gateway request failed", failure));
    this.name = "GatewayUnreachableError";
    this.code =
      failure.why === "network" ? failure.code : failure.why === "cancelled" ? "ABORT_ERR" : "ETIMEDOUT";
  }
}

export interface RestResponse {
  status: number;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json: unknown;
}

export interface RestRequestOptions {
  body?: unknown;
  signal?: AbortSignal;
  /** Overrides requestTimeoutMs for this call. */
  timeoutMs?: number;
  /** Statuses that are answers, not errors (e.g. 404 for "already gone"); "any": every status. */
  accept?: number[] | "any";
}

const BODY_IN_ERROR = 300;

export class GatewayRest {
  /** The base URL with a trailing slash, credentials and query removed (safe to show). */
  readonly baseUrl: URL;
  readonly options: GatewayOptions;
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly launchTimeoutMs: number;

  constructor(options: GatewayOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new Error(`the gateway URL ${JSON.stringify(options.url)} is not a valid URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new Error(`the gateway URL must start with http:// or https:// (got ${url.protocol}//…)`);
    url.search = "";
    url.hash = "";
    url.username = "";
    url.password = "";
    if (!url.pathname.endsWith("/")) url.pathname += "/";
    this.baseUrl = url;
    this.options = options;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.launchTimeoutMs = options.launchTimeoutMs ?? DEFAULT_LAUNCH_TIMEOUT_MS;
  }

  /** The gateway as shown in messages: scheme, host, port and base path (never the token). */
  get display(): string {
    return this.baseUrl.href.replace(/\/$/, "");
  }

  /** An absolute URL for an API path ("api/kernels", no leading slash needed). */
  url(path: string): URL {
    return new URL(path.replace(/^\//, ""), this.baseUrl);
  }

  /** Headers for every request and the WebSocket upgrade. */
  headers(): Record<string, string> {
    const h: Record<string, string> = { ...(this.options.headers ?? {}) };
    if (this.options.token) h.Authorization = `token ${this.options.token}`;
    return h;
  }

  async request(method: string, path: string, o: RestRequestOptions = {}): Promise<RestResponse> {
    const url = this.url(path);
    const shown = `${method} ${url.pathname}`;
    const timeoutMs = o.timeoutMs ?? this.requestTimeoutMs;
    const payload = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body));
    const headers: Record<string, string> = { Accept: "application/json", ...this.headers() };
    if (payload) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(payload.length);
    }
    const res = await new Promise<{ status: number; body: string; statusText: string; hub: boolean }>(
      (resolve, reject) => {
        const mod = url.protocol === "https:" ? https : http;
        let settled = false;
        let connectTimer: NodeJS.Timeout | undefined;
        const where = { kind: "unreachable", gateway: this.display, request: shown } as const;
        const fail = (failure: Extract<GatewayFailure, { kind: "unreachable" }>) => {
          if (settled) return;
          settled = true;
          cleanup();
          req.destroy();
          reject(new GatewayUnreachableError(failure, method, url.pathname));
        };
        const onAbort = () => fail({ ...where, why: "cancelled" });
        const total = setTimeout(() => fail({ ...where, why: "timeout", ms: timeoutMs }), timeoutMs);
        const cleanup = () => {
          clearTimeout(total);
          clearTimeout(connectTimer);
          o.signal?.removeEventListener("abort", onAbort);
        };
        const req = mod.request(url, { method, headers, ca: this.options.ca, agent: false }, (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (c: Buffer) => chunks.push(c));
          response.on("error", (err) => fail(network(where, err)));
          response.on("end", () => {
            if (settled) return;
            settled = true;
            cleanup();
            resolve({
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? "",
              body: Buffer.concat(chunks).toString("utf8"),
              hub: response.headers[HUB_HEADER] !== undefined,
            });
          });
        });
        req.on("socket", (socket) => {
          if (!socket.connecting) return;
          connectTimer = setTimeout(
            () => fail({ ...where, why: "connect-timeout", ms: this.connectTimeoutMs }),
            this.connectTimeoutMs,
          );
          socket.once(url.protocol === "https:" ? "secureConnect" : "connect", () =>
            clearTimeout(connectTimer),
          );
        });
        req.on("error", (err) => fail(network(where, err)));
        if (o.signal?.aborted) return onAbort();
        o.signal?.addEventListener("abort", onAbort, { once: true });
        req.end(payload);
      },
    );
    let json: unknown;
    try {
      json = res.body ? JSON.parse(res.body) : undefined;
    } catch {
      json = undefined;
    }
    if ((res.status >= 200 && res.status < 300) || o.accept === "any" || o.accept?.includes(res.status))
      return { status: res.status, body: res.body, json };
    const hub = res.hub ? await this.hubState(o.signal) : undefined;
    // The hub answered for a server it calls ready: the failure is the server's own.
    const hubSaid = hub && hub.state !== "ready" ? { hub } : {};
    const said = bodyExcerpt(res.body, json);
    throw new GatewayHttpError(
      {
        kind: "refused",
        gateway: this.display,
        request: shown,
        status: res.status,
        ...(res.statusText ? { statusText: res.statusText } : {}),
        ...(said && !hubSaid.hub ? { said } : {}),
        ...hubSaid,
      },
      method,
      url.pathname,
      res.body,
    );
  }

  /**
   * When the gateway is a JupyterHub user server and an answer carried the hub's header: what the
   * hub says of the server (gateway/hub.ts). Undefined for any other gateway.
   */
  async hubState(signal?: AbortSignal): Promise<HubServerState | undefined> {
    const address = hubOf(this.baseUrl);
    if (!address) return undefined;
    return hubServerState(address, {
      headers: this.headers(),
      ca: this.options.ca,
      signal,
      timeoutMs: this.requestTimeoutMs,
    });
  }

  /** Waits (at most `timeoutMs`) for a JupyterHub user server that is starting; true once it is ready. */
  async waitForHubServer(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const address = hubOf(this.baseUrl);
    if (!address) return false;
    return waitForHubServer(address, { headers: this.headers(), ca: this.options.ca, signal, timeoutMs });
  }
}

/** A failed connection, with the network error's message and code. */
function network(
  where: { kind: "unreachable"; gateway: string; request: string },
  err: Error,
): Extract<GatewayFailure, { kind: "unreachable" }> {
  const code = (err as NodeJS.ErrnoException).code;
  return { ...where, why: "network", cause: err.message, ...(code ? { code } : {}) };
}

/** The server's own message, short: Jupyter servers answer errors as {"message": …, "reason": …}. */
function bodyExcerpt(body: string, json: unknown): string | undefined {
  const j = json as { message?: unknown; reason?: unknown } | undefined;
  let text = typeof j?.message === "string" && j.message ? j.message : "";
  if (!text && typeof j?.reason === "string") text = j.reason;
  if (!text && json === undefined)
    text = body
      .replace(/<[^>]*>/g, " ")
      .replace(/\s+/g, " ")
      .trim();
  if (!text) return undefined;
  return text.length > BODY_IN_ERROR ? `${text.slice(0, BODY_IN_ERROR)}…` : text;
}
