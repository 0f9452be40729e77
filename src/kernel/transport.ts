/**
 * What the execution lifecycle needs from a backend's byte-moving layer: send a message on
 * shell/control/stdin, and receive every message (any channel) in arrival order.
 * ZeroMQ (local) and WebSocket (gateway) backends each implement this; nothing above it knows which.
 */
import type { DeathCause } from "./errors.js";
import type { JupyterMessage } from "./types.js";

export type OutgoingChannel = "shell" | "control" | "stdin";

export interface TransportStats {
  /** Incoming messages dropped because their HMAC signature did not verify. */
  invalidSignatures: number;
  /** Incoming messages dropped because they could not be parsed. */
  malformed: number;
  /**
   * How long the kernel's heartbeat has gone unanswered, once that is past the transport's limit
   * (a hint, not a death: local kernels die when their process does).
   */
  heartbeatSilentMs?: number;
}

export interface KernelTransport {
  /** Queues a message on a channel (msg.channel is ignored; `channel` decides). Never throws once closed: drops. */
  send(channel: OutgoingChannel, msg: JupyterMessage): void;
  /** The single receiver of every incoming message; msg.channel says where it came from. */
  onMessage(handler: (msg: JupyterMessage) => void): void;
  /**
   * Called once if the transport decides the kernel is unreachable (e.g. heartbeat lost); `cause`:
   * the last failure seen while trying to reach it, when typed.
   */
  onLost(handler: (reason: string, cause?: DeathCause) => void): void;
  /**
   * Calls `listener` each time the connection to the kernel was made again after a loss (a gateway's
   * WebSocket), and once when the transport ends. The kernel may have been restarted meanwhile:
   * ConnectedKernel then asks it who it is. Absent where a connection is never re-established.
   */
  onReconnect?(listener: () => void): () => void;
  /**
   * Drops the IOPub connection and makes it again: while a kernel starts, it answered kernel_info
   * on shell but no IOPub message came (a subscription that never joined). Absent where the server
   * owns the kernel's sockets (gateway).
   */
  reconnectIOPub?(): void;
  /** The kernel answered kernel_info: start liveness checks (e.g. heartbeat) now. */
  ready?(): void;
  /**
   * Resolves once every channel an execution uses can receive. The kernel answers kernel_info on
   * shell while the stdin socket may still be connecting: an input_request sent to it then is dropped
   * by the kernel's ROUTER, and the cell's input() waits forever.
   */
  channelsReady?(): Promise<void>;
  stats(): TransportStats;
  close(): Promise<void>;
}
