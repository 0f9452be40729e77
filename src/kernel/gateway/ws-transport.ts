/**
 * A KernelTransport over a Jupyter server's channels WebSocket (/api/kernels/{id}/channels).
 *
 * A closed socket is not a dead kernel (docs/backends.md): the transport reconnects with backoff
 * (0.1 s, 0.2 s, … capped at 5 s) under the SAME session_id, so the server replays what the kernel
 * sent while we were away; sends made meanwhile are queued and go out on reconnect. The kernel
 * counts as lost only when the server says it no longer exists (GET /api/kernels/{id} → 404), or
 * when the gateway stayed unreachable past a bounded give-up time. jupyter_server (1.23) keeps the
 * socket of a kernel deleted by someone else open, so once the kernel is ready the transport also
 * asks GET /api/kernels/{id} every few seconds: a 404 there is the same "gone".
 */
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import type { HubServerState } from "../errors.js";
import { type DeathCause, type GatewayFailure, isGatewayFailure, KernelFailureError } from "../errors.js";
import type { KernelTransport, OutgoingChannel, TransportStats } from "../transport.js";
import type { JupyterMessage } from "../types.js";
import { HUB_HEADER } from "./hub.js";
import { GatewayHttpError, type GatewayRest, GatewayUnreachableError } from "./rest.js";
import { channelsPath, kernelPath } from "./restapi.js";
import { decodeMessage, encodeMessage, V1_PROTOCOL, type WsProtocol } from "./ws-codec.js";

export interface WsTransportOptions {
  /** "auto" (default): offer the binary v1 subprotocol, fall back to JSON when the server refuses it. */
  protocol?: "auto" | "json";
  /** Give up reconnecting after this long without reaching the gateway (default 2 min). */
  giveUpMs?: number;
  /** Cap on the pause between reconnect attempts (default 5 s). */
  maxBackoffMs?: number;
  /** How often to ask the server whether the kernel still exists once it is ready (default 5 s; 0: never). */
  pollIntervalMs?: number;
  /** Called once, with the reason, when the server says the kernel no longer exists. */
  onGone?: (reason: string) => void;
  /**
   * Called instead of sending a shutdown_request (not a restart): a gateway must stop its kernel
   * itself (DELETE), or it restarts a kernel that exits behind its back.
   */
  onShutdownRequest?: () => void;
  /** IOPub `status` the server sends about its kernel (`restarting`, `dead`): it is restarting it itself. */
  onServerStatus?: (state: string) => void;
}

const FIRST_BACKOFF_MS = 100;
const DEFAULT_POLL_MS = 5000;
const DEFAULT_GIVE_UP_MS = 120_000;
const DEFAULT_MAX_BACKOFF_MS = 5000;
const NO_SUBPROTOCOL = /no subprotocol/i;

export class GatewayWsTransport implements KernelTransport {
  readonly kernelId: string;
  /** The session_id this transport connects with; the server keys its replay buffer on it. */
  readonly sessionId = randomUUID();
  /** How messages are framed on the socket: negotiated at the first connect. */
  protocol: WsProtocol;
  /** How many times the socket was re-established after a loss. */
  reconnects = 0;
  /** How many times a silent socket (no answer to a ping) was dropped to reconnect. */
  silentDrops = 0;
  /** When the socket last received anything (a message or a pong). */
  private heard = 0;
  private pingSentAt?: number;
  private readonly rest: GatewayRest;
  private readonly options: WsTransportOptions;
  private socket?: WebSocket;
  private readonly outbox: (Buffer | string)[] = [];
  private handler: (msg: JupyterMessage) => void = () => {};
  private lostHandler: (reason: string, cause?: DeathCause) => void = () => {};
  private readonly reconnectListeners = new Set<() => void>();
  private closed = false;
  private lost = false;
  private reconnecting = false;
  private wake?: () => void;
  private pollTimer?: NodeJS.Timeout;
  private polling = false;
  private watching = false;
  private malformed = 0;
  private nudging = false;

  private constructor(rest: GatewayRest, kernelId: string, options: WsTransportOptions) {
    this.rest = rest;
    this.kernelId = kernelId;
    this.options = options;
    this.protocol = options.protocol === "json" ? "json" : "v1";
  }

  /**
   * Opens the channels socket. The first open is bounded by the gateway's launch timeout, not its
   * connect timeout: jupyter_server answers a kernel's first WebSocket only once the kernel has
   * replied to its kernel_info_request, i.e. once a kernel just launched has finished starting
   * (docs/backends.md). Later opens (reconnects) are answered at once and keep the connect bound.
   */
  static async connect(
    rest: GatewayRest,
    kernelId: string,
    options: WsTransportOptions = {},
    signal?: AbortSignal,
  ): Promise<GatewayWsTransport> {
    const t = new GatewayWsTransport(rest, kernelId, options);
    await t.open(true, signal);
    return t;
  }

  private channelsUrl(): string {
    const url = this.rest.url(channelsPath(this.kernelId));
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("session_id", this.sessionId);
    return url.href;
  }

  /** Opens a socket and makes it the current one; rejects with what went wrong. */
  private async open(first: boolean, signal?: AbortSignal): Promise<void> {
    const handshakeMs = first ? this.rest.launchTimeoutMs : this.rest.connectTimeoutMs;
    try {
      await this.openWith(this.protocol, handshakeMs, signal);
    } catch (err) {
      // A server that does not speak the binary protocol answers without a subprotocol.
      if (!(first && this.protocol === "v1" && NO_SUBPROTOCOL.test((err as Error).message))) throw err;
      this.protocol = "json";
      await this.openWith("json", handshakeMs, signal);
    }
  }

  private openWith(protocol: WsProtocol, handshakeMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const path = `GET ${new URL(this.channelsUrl()).pathname}`;
      const cancelled = () =>
        new Error(`opening the kernel's WebSocket at ${this.rest.display} (${path}) was cancelled`);
      if (signal?.aborted) {
        reject(cancelled());
        return;
      }
      const ws = new WebSocket(this.channelsUrl(), protocol === "v1" ? [V1_PROTOCOL] : [], {
        headers: this.rest.headers(),
        ca: this.rest.options.ca,
        handshakeTimeout: handshakeMs,
        perMessageDeflate: false,
        maxPayload: 0,
      });
      const onAbort = () => {
        reject(cancelled());
        ws.terminate();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      ws.once("open", () => signal?.removeEventListener("abort", onAbort));
      ws.once("close", () => signal?.removeEventListener("abort", onAbort));
      let opened = false;
      let answered = false;
      ws.on("unexpected-response", (_req, res) => {
        answered = true;
        const refused = (hub?: HubServerState) =>
          new GatewayHttpError(
            {
              kind: "refused",
              gateway: this.rest.display,
              request: path,
              status: res.statusCode ?? 0,
              ...(res.statusMessage ? { statusText: res.statusMessage } : {}),
              websocket: true,
              ...(hub && hub.state !== "ready" ? { hub } : {}),
            },
            "GET",
            path.slice(4),
            "",
          );
        res.resume();
        // A JupyterHub answered: ask it what became of the user's server (gateway/hub.ts).
        if (res.headers[HUB_HEADER] !== undefined)
          void this.rest.hubState(signal).then(
            (hub) => reject(refused(hub)),
            () => reject(refused()),
          );
        else reject(refused());
        ws.terminate();
      });
      ws.on("error", (err) => {
        // The server's answer (above) says more than the error terminate() makes ws report.
        if (!opened && !answered) {
          const where = { kind: "unreachable", gateway: this.rest.display, request: path } as const;
          const code = (err as NodeJS.ErrnoException).code;
          reject(
            new GatewayUnreachableError(
              /handshake has timed out/i.test(err.message)
                ? { ...where, why: "timeout", ms: handshakeMs, websocket: true }
                : {
                    ...where,
                    why: "network",
                    cause: err.message,
                    ...(code ? { code } : {}),
                    websocket: true,
                  },
              "GET",
              path.slice(4),
            ),
          );
        }
      });
      ws.on("open", () => {
        opened = true;
        if (this.closed) {
          ws.terminate();
          reject(new Error("the connection to the kernel was closed"));
          return;
        }
        this.socket = ws;
        this.heard = Date.now();
        this.pingSentAt = undefined;
        ws.on("message", (data, isBinary) => {
          this.heard = Date.now();
          this.nudge(ws);
          this.receive(data, isBinary);
        });
        ws.on("pong", () => {
          this.heard = Date.now();
        });
        ws.on("close", () => this.onClose(ws));
        // flush what was queued while away, in order
        for (const frame of this.outbox.splice(0)) ws.send(frame);
        resolve();
      });
    });
  }

  /**
   * jupyter_server does not turn off Nagle's algorithm on its sockets, so after each small message
   * it waits for our ACK before writing the next one, and Linux delays that ACK by up to 40 ms: a
   * trivial execution took ~50 ms. A pong frame right after we read lets the ACK ride on it at once
   * (a pong, not a ping: the answer to a ping would be one more small message held back). Measured
   * under load: ~54 ms per trivial execute without, ~50 with a ping, ~19–28 with a pong (local ~17).
   */
  private nudge(ws: WebSocket): void {
    if (this.nudging) return;
    this.nudging = true;
    setImmediate(() => {
      this.nudging = false;
      if (ws.readyState === WebSocket.OPEN) ws.pong(); // unsolicited: the server does not answer it
    });
  }

  private receive(data: WebSocket.RawData, isBinary: boolean): void {
    const buf = Array.isArray(data)
      ? Buffer.concat(data)
      : Buffer.isBuffer(data)
        ? data
        : Buffer.from(data as ArrayBuffer);
    const msg = decodeMessage(this.protocol, buf, isBinary);
    if (!msg) {
      this.malformed++;
      return;
    }
    // ipykernel announces on IOPub that it is shutting down (someone DELETEd it, or it is culled):
    // ask the server soon instead of at the next periodic check.
    if (
      msg.channel === "iopub" &&
      msg.header.msg_type === "shutdown_reply" &&
      !(msg.content as { restart?: boolean }).restart
    )
      void this.watchShutdown();
    if (msg.channel === "iopub" && msg.header.msg_type === "status") {
      const state = (msg.content as { execution_state?: string }).execution_state;
      if (state === "restarting" || state === "dead") this.options.onServerStatus?.(state);
    }
    this.handler(msg);
  }

  private onClose(ws: WebSocket): void {
    if (this.socket !== ws) return;
    this.socket = undefined;
    if (this.closed || this.lost) return;
    void this.reconnect();
  }

  /** A pause between reconnect tries; it keeps the process alive (the kernel's callers wait on it). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private async reconnect(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    const since = Date.now();
    let backoff = FIRST_BACKOFF_MS;
    let lastError: unknown;
    const giveUpMs = this.options.giveUpMs ?? DEFAULT_GIVE_UP_MS;
    try {
      while (!this.closed && !this.lost) {
        await this.pause(backoff);
        backoff = Math.min(backoff * 2, this.options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS);
        if (this.closed) return;
        try {
          const r = await this.rest.request("GET", kernelPath(this.kernelId), {
            accept: [404],
            timeoutMs: this.rest.connectTimeoutMs,
          });
          if (r.status === 404) {
            this.lose(
              `the gateway at ${this.rest.display} says kernel ${this.kernelId} no longer exists`,
              true,
            );
            return;
          }
          await this.open(false);
          this.reconnects++;
          for (const l of [...this.reconnectListeners]) l();
          return;
        } catch (err) {
          lastError = err;
          // A JupyterHub answered for the user's server: it is gone, or starting again with new
          // kernels, or the token was revoked — waiting longer brings this kernel back in no case.
          if (this.loseToHub(err)) return;
        }
        if (Date.now() - since >= giveUpMs) {
          const unreachable = `the gateway at ${this.rest.display} stayed unreachable for ${Math.round(
            (Date.now() - since) / 1000,
          )} s after the kernel's connection was lost`;
          // The cause stays typed (tools/ words it as "(last: …)"): a gateway's failure as it was,
          // another error as a network failure with its message. The kernel may well live on there.
          const typed = lastError instanceof KernelFailureError ? lastError.failure : undefined;
          const last: GatewayFailure =
            typed && isGatewayFailure(typed)
              ? typed
              : {
                  kind: "unreachable",
                  gateway: this.rest.display,
                  request: `GET ${kernelPath(this.kernelId)}`,
                  why: "network",
                  cause: (lastError as Error | undefined)?.message ?? "no answer",
                };
          this.lose(unreachable, false, { kind: "unreachable", last });
          return;
        }
      }
    } finally {
      this.reconnecting = false;
    }
  }

  /**
   * The kernel answered kernel_info: from now on, notice when the server no longer has it, and when
   * the connection went silent (checkAlive).
   */
  ready(): void {
    const every = this.options.pollIntervalMs ?? DEFAULT_POLL_MS;
    if (this.pollTimer || every <= 0 || this.closed) return;
    this.pollTimer = setInterval(() => {
      this.checkAlive();
      void this.poll();
    }, every);
    this.pollTimer.unref();
  }

  /**
   * A link that goes down without a word (a cable, a VPN, a suspended laptop's Wi-Fi) leaves the
   * socket open with nothing arriving; TCP notices only after many minutes. Every check: a socket
   * that heard nothing since a ping sent at least connectTimeoutMs ago is dropped, and the reconnect
   * rule takes over (with its give-up window); otherwise a new ping goes out (the server answers it).
   */
  private checkAlive(): void {
    const ws = this.socket;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.closed || this.lost) return;
    const now = Date.now();
    const pending = this.pingSentAt !== undefined && this.heard < this.pingSentAt;
    if (pending && now - this.pingSentAt! >= this.rest.connectTimeoutMs) {
      this.silentDrops++;
      ws.terminate();
      return;
    }
    if (!pending) {
      this.pingSentAt = now;
      ws.ping();
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || this.reconnecting || this.closed || this.lost) return;
    this.polling = true;
    try {
      const r = await this.rest.request("GET", kernelPath(this.kernelId), {
        accept: [404],
      });
      if (r.status === 404) this.lose(this.goneReason(), true);
    } catch (err) {
      // unreachable or refused for now: a lost socket starts the reconnect rule, which decides;
      // but a hub that answers for the user's server says that server is gone
      this.loseToHub(err);
    } finally {
      this.polling = false;
    }
  }

  /** After the kernel said it is shutting down: check often (bounded) until the server drops it. */
  private async watchShutdown(): Promise<void> {
    if (this.watching) return;
    this.watching = true;
    try {
      for (let i = 0; i < 50 && !this.closed && !this.lost; i++) {
        await this.pause(200);
        await this.poll();
      }
    } finally {
      this.watching = false;
    }
  }

  /** Loses the kernel when `err` is a JupyterHub's answer for a server that is not running (true then). */
  private loseToHub(err: unknown): boolean {
    const hub = err instanceof GatewayHttpError ? err.failure.hub : undefined;
    if (!hub || hub.state === "ready" || hub.state === "unknown") return false;
    this.lose(
      `the gateway at ${this.rest.display} is a JupyterHub user server that no longer has kernel ${this.kernelId}`,
      hub.state !== "token-refused",
      { kind: "hub-server", hub },
    );
    return true;
  }

  private goneReason(): string {
    return `the gateway at ${this.rest.display} says kernel ${this.kernelId} no longer exists`;
  }

  private lose(reason: string, gone: boolean, cause?: DeathCause): void {
    if (this.lost || this.closed) return;
    this.lost = true;
    clearInterval(this.pollTimer);
    this.outbox.length = 0;
    if (gone) this.options.onGone?.(reason);
    this.lostHandler(reason, cause);
    for (const l of [...this.reconnectListeners]) l(); // nothing more to wait for
  }

  /** Called after every re-established connection, and once when the transport ends (tests, renewConnection). */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** The socket is open right now (false while reconnecting). */
  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Drops the current socket without closing the transport (a reconnect follows; for tests). */
  dropConnection(): void {
    this.socket?.terminate();
  }

  /**
   * A new socket now: the server makes its ZeroMQ streams to the kernel on a socket's open, and after
   * it restarted the kernel on new ports (jupyter_server does so for a kernel that dies young) the
   * old socket's streams lead nowhere. Resolves once the new socket is open.
   */
  renewConnection(): Promise<void> {
    if (this.closed || this.lost) return Promise.resolve();
    return new Promise((resolve) => {
      const off = this.onReconnect(() => {
        off();
        resolve();
      });
      this.dropConnection();
    });
  }

  send(channel: OutgoingChannel, msg: JupyterMessage): void {
    if (this.closed || this.lost) return;
    if (
      channel === "control" &&
      msg.header.msg_type === "shutdown_request" &&
      !(msg.content as { restart?: boolean }).restart &&
      this.options.onShutdownRequest
    ) {
      this.options.onShutdownRequest();
      return;
    }
    const frame = encodeMessage(this.protocol, channel, msg);
    const ws = this.socket;
    if (ws && ws.readyState === WebSocket.OPEN && this.outbox.length === 0) ws.send(frame);
    else this.outbox.push(frame);
  }

  onMessage(handler: (msg: JupyterMessage) => void): void {
    this.handler = handler;
  }

  onLost(handler: (reason: string, cause?: DeathCause) => void): void {
    this.lostHandler = handler;
  }

  stats(): TransportStats {
    return { invalidSignatures: 0, malformed: this.malformed };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pollTimer);
    this.outbox.length = 0;
    this.wake?.();
    for (const l of [...this.reconnectListeners]) l(); // nothing more to wait for
    const ws = this.socket;
    this.socket = undefined;
    if (!ws) return;
    await new Promise<void>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) return resolve();
      const timer = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000);
      timer.unref();
      ws.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      ws.close();
    });
  }
}
