/**
 * ZeroMQ transport to a kernel's channels (the local backend's, and any backend's that reaches a
 * kernel's sockets itself): DEALER sockets for shell/control/stdin (shell and stdin share one
 * routing id, so the kernel's input_request reaches us), SUB for IOPub, DEALER for the heartbeat.
 * Sockets connect before the kernel binds (ZeroMQ queues and reconnects), which lets the first
 * kernel_info_request go out the moment the kernel is listening.
 */
import { createRequire } from "node:module";
import type * as Zmq from "zeromq";

/**
 * zeromq (a native addon) is loaded by the first local kernel, not at import: a process whose
 * kernels are all on a gateway (a named-session call) never pays for it.
 */
let zmqModule: typeof Zmq | undefined;
function zeromq(): typeof Zmq {
  zmqModule ??= createRequire(import.meta.url)("zeromq") as typeof Zmq;
  return zmqModule;
}

import type { KernelTransport, OutgoingChannel, TransportStats } from "../transport.js";
import type { JupyterMessage } from "../types.js";
import { WireCodec } from "../wire.js";
import { type ConnectionInfo, endpoint } from "./connection.js";

export interface HeartbeatOptions {
  /** Ping period (default 3000 ms). */
  intervalMs?: number;
  /**
   * Consecutive unanswered pings after which the heartbeat counts as silent (default 5: 15 s). A
   * silent heartbeat is a hint, never a death: a local kernel is dead when its process is gone
   * (docs/python-tool.md, "How a dead kernel is noticed"). IRkernel answers pings only from its main
   * loop, so a busy R kernel is silent while it lives.
   */
  misses?: number;
}

export class ZmqTransport implements KernelTransport {
  private readonly codec: WireCodec;
  private readonly shell: Zmq.Dealer;
  private readonly control: Zmq.Dealer;
  private readonly stdin: Zmq.Dealer;
  private iopub: Zmq.Subscriber;
  private readonly info: ConnectionInfo;
  /** How many times the IOPub socket was made again (reconnectIOPub): for tests and diagnostics. */
  iopubReconnects = 0;
  private readonly hb: Zmq.Dealer;
  private handler: (msg: JupyterMessage) => void = () => {};
  private closed = false;
  private hbTimer?: NodeJS.Timeout;
  private hbOutstanding = 0;
  /** When the oldest unanswered ping was sent (meaningful while hbOutstanding > 0). */
  private hbSilentSince = 0;
  /**
   * Messages waiting for their socket: zeromq allows one send in flight per socket (a second one
   * throws EBUSY), and a send stays in flight while the kernel is not reading yet (during its start
   * the kernel_info request is repeated). Present while the socket has a send in flight.
   */
  private readonly outbox = new Map<Zmq.Dealer, Buffer[][]>();
  private readonly hbOptions: Required<HeartbeatOptions>;
  /** Resolved when the stdin socket has completed its ZMTP handshake with the kernel. */
  private readonly stdinConnected: Promise<void>;

  constructor(info: ConnectionInfo, identity: string, heartbeat: HeartbeatOptions = {}) {
    this.info = info;
    this.codec = new WireCodec(info.key, info.signature_scheme);
    this.hbOptions = { intervalMs: heartbeat.intervalMs ?? 3000, misses: heartbeat.misses ?? 5 };
    const opts = { linger: 0, routingId: identity };
    const zmq = zeromq();
    this.shell = new zmq.Dealer(opts);
    this.control = new zmq.Dealer({ linger: 0 });
    this.stdin = new zmq.Dealer(opts);
    this.iopub = this.subscriber();
    this.hb = new zmq.Dealer({ linger: 0 });
    // The kernel's stdin ROUTER knows our routing id only after the handshake: until then its
    // input_request would be dropped (channelsReady waits for it).
    this.stdinConnected = new Promise((resolve) => this.stdin.events.on("handshake", () => resolve()));
    this.shell.connect(endpoint(info, info.shell_port));
    this.control.connect(endpoint(info, info.control_port));
    this.stdin.connect(endpoint(info, info.stdin_port));
    this.hb.connect(endpoint(info, info.hb_port));
    void this.receive(this.shell, "shell");
    void this.receive(this.control, "control");
    void this.receive(this.stdin, "stdin");
    void this.receiveHeartbeats();
  }

  /** A connected IOPub socket subscribed to everything, its messages going to the handler. */
  private subscriber(): Zmq.Subscriber {
    // A bounded IOPub receive queue (default 1000 messages) keeps the host's memory bounded when it
    // reads slower than the kernel prints; kernels started by runtime/ publish with
    // ZMQ_XPUB_NODROP (set by its init script), so the kernel waits instead of dropping output.
    const iopub = new (zeromq().Subscriber)({ linger: 0, receiveHighWaterMark: 32 });
    iopub.subscribe();
    iopub.connect(endpoint(this.info, this.info.iopub_port));
    void this.receive(iopub, "iopub");
    return iopub;
  }

  /**
   * Drops the IOPub socket and connects a new one (KernelTransport.reconnectIOPub): the kernel
   * answers on shell, yet nothing reaches us on IOPub — its subscription never joined. Seen once
   * under load: a start waited 60 s for a status that never came.
   */
  reconnectIOPub(): void {
    if (this.closed) return;
    const old = this.iopub;
    this.iopub = this.subscriber();
    this.iopubReconnects++;
    try {
      old.close();
    } catch {
      // already closed
    }
  }

  private async receive(
    socket: Zmq.Dealer | Zmq.Subscriber,
    channel: JupyterMessage["channel"],
  ): Promise<void> {
    try {
      for await (const frames of socket) {
        const msg = this.codec.deserialize(frames as Buffer[], channel);
        if (msg) this.handler(msg);
      }
    } catch {
      // socket closed
    }
  }

  private async receiveHeartbeats(): Promise<void> {
    try {
      for await (const _ of this.hb) this.hbOutstanding = 0;
    } catch {
      // socket closed
    }
  }

  send(channel: OutgoingChannel, msg: JupyterMessage): void {
    if (this.closed) return;
    const socket = channel === "shell" ? this.shell : channel === "control" ? this.control : this.stdin;
    const frames = this.codec.serialize(msg);
    const waiting = this.outbox.get(socket);
    if (waiting) {
      waiting.push(frames);
      return;
    }
    this.outbox.set(socket, []);
    void this.drain(socket, frames);
  }

  /** Sends `frames`, then whatever queued behind it on this socket, one at a time, in order. */
  private async drain(socket: Zmq.Dealer, frames: Buffer[]): Promise<void> {
    let next: Buffer[] | undefined = frames;
    while (next && !this.closed) {
      try {
        await socket.send(next);
      } catch {
        // closed while queued: the kernel is going away, liveness reports it
      }
      next = this.outbox.get(socket)?.shift();
    }
    this.outbox.delete(socket);
  }

  onMessage(handler: (msg: JupyterMessage) => void): void {
    this.handler = handler;
  }

  /** Never called: a local kernel is lost when its process ends (LaunchedKernel.exited), not here. */
  onLost(_handler: (reason: string) => void): void {}

  channelsReady(): Promise<void> {
    return this.stdinConnected;
  }

  /** Starts the heartbeat once the kernel is known to be up. */
  ready(): void {
    if (this.hbTimer || this.closed) return;
    this.hbTimer = setInterval(() => {
      // One ping at a time: an unanswered ping counts a miss and is not repeated. IRkernel answers
      // pings from its main loop, one per turn, so pings piled up during a busy cell held its next
      // execution back by tens of seconds.
      if (this.hbOutstanding > 0) {
        this.hbOutstanding++;
        return;
      }
      this.hbSilentSince = Date.now();
      this.hbOutstanding = 1;
      this.hb.send(["", "ping"]).catch(() => {});
    }, this.hbOptions.intervalMs);
    this.hbTimer.unref();
  }

  stats(): TransportStats {
    const silent = this.hbOutstanding >= this.hbOptions.misses;
    return {
      invalidSignatures: this.codec.invalidSignatures,
      malformed: this.codec.malformed,
      ...(silent ? { heartbeatSilentMs: Date.now() - this.hbSilentSince } : {}),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.hbTimer);
    for (const s of [this.shell, this.control, this.stdin, this.iopub, this.hb]) {
      try {
        s.close();
      } catch {
        // already closed
      }
    }
  }
}
