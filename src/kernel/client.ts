/**
 * A kernel client over any transport: routes incoming messages to the request that caused them
 * (by parent_header.msg_id), tracks the kernel's execution_state, and waits for readiness.
 * Messages whose parent is not a live request of ours are dropped (counted), so one request's
 * output never leaks into another's. A request and its completion (reply + idle) are a
 * RequestFuture (future.ts); time limits are AbortSignals (time-limits.ts).
 */

import { KernelStartError } from "./errors.js";
import { type FutureHooks, type FutureRouter, RequestFuture } from "./future.js";
import type { MessageFactory } from "./messages.js";
import { isMessageType } from "./messages.js";
import { anySignal, deadlineSignal, TimeoutError } from "./time-limits.js";
import type { KernelTransport, OutgoingChannel } from "./transport.js";
import type { JupyterMessage, KernelInfo } from "./types.js";

export type RequestHandler = (msg: JupyterMessage) => void;
export type ExecutionState = "starting" | "busy" | "idle" | "dead" | "restarting" | "unknown";

export interface RequestOptions {
  /** Give up after this long: `done` rejects with a TimeoutError naming the reply. */
  timeoutMs?: number;
  /** Give up when this fires: rejects with its reason. */
  signal?: AbortSignal;
}

export interface WaitReadyOptions {
  /**
   * Fires when waiting is pointless or over: a TimeoutError reason becomes "did not answer
   * kernel_info within N ms (what was heard)"; any other reason (the process exited, the caller
   * cancelled) is the rejection as it is.
   */
  signal?: AbortSignal;
  /** Asks again this often, keeping earlier requests live (the first complete answer wins). */
  pollMs?: number;
  /** Nothing heard at all for this long, and not `progressing`: StartStalledError. */
  stallMs?: number;
  progressing?: () => boolean;
  /**
   * The kernel answered on shell but no IOPub message came for this long: the transport's IOPub
   * connection is made again (KernelTransport.reconnectIOPub), at most IOPUB_RECONNECTS times
   * (default 2000 ms).
   */
  iopubQuietMs?: number;
}

/** How many times one wait for readiness makes a silent IOPub connection again. */
export const IOPUB_RECONNECTS = 3;

export class KernelClient implements FutureRouter {
  readonly transport: KernelTransport;
  readonly factory: MessageFactory;
  private readonly handlers = new Map<string, RequestHandler>();
  /** Last execution_state seen on IOPub (any parent). */
  executionState: ExecutionState = "unknown";
  /** Messages with no live request to deliver them to. */
  unrouted = 0;
  private stateListener?: (state: ExecutionState) => void;

  constructor(transport: KernelTransport, factory: MessageFactory) {
    this.transport = transport;
    this.factory = factory;
    transport.onMessage((msg) => this.dispatch(msg));
  }

  onExecutionState(listener: (state: ExecutionState) => void): void {
    this.stateListener = listener;
  }

  private dispatch(msg: JupyterMessage): void {
    if (msg.channel === "iopub" && isMessageType(msg, "status")) {
      const state = msg.content.execution_state;
      this.executionState = state;
      if (state === "dead" || state === "restarting") this.stateListener?.(state);
    }
    const parentId = msg.parent_header?.msg_id;
    const handler = parentId === undefined ? undefined : this.handlers.get(parentId);
    if (handler) handler(msg);
    else this.unrouted++;
  }

  /** Sends a message that expects nothing back (input_reply, shutdown_request). */
  send(channel: OutgoingChannel, msg: JupyterMessage): void {
    this.transport.send(channel, msg);
  }

  /** Delivers messages whose parent is `msgId` to `handler` until the returned release (FutureRouter). */
  route(msgId: string, handler: RequestHandler): () => void {
    this.handlers.set(msgId, handler);
    return () => {
      if (this.handlers.get(msgId) === handler) this.handlers.delete(msgId);
    };
  }

  /** Sends a request and returns its future: hooks get its messages; `done` = reply + idle. */
  future(
    channel: OutgoingChannel,
    msg: JupyterMessage,
    hooks?: FutureHooks,
    options?: { signal?: AbortSignal },
  ): RequestFuture {
    return new RequestFuture(this, channel, msg, hooks, options);
  }

  /**
   * Sends a request and resolves with its reply once both the reply and the IOPub `idle` for it
   * arrived (the completion rule, in RequestFuture), or rejects when the time (a number: ms, or
   * `timeoutMs`) runs out — a TimeoutError — or `signal` fires.
   */
  async request(
    channel: OutgoingChannel,
    msg: JupyterMessage,
    options: number | RequestOptions = {},
  ): Promise<JupyterMessage> {
    const { timeoutMs, signal } = typeof options === "number" ? { timeoutMs: options } : options;
    const replyType = msg.header.msg_type.replace("_request", "_reply");
    const limit = deadlineSignal(
      timeoutMs,
      () => new TimeoutError(timeoutMs!, `no ${replyType} within ${timeoutMs} ms`),
      [signal],
    );
    try {
      return await this.future(channel, msg, {}, { signal: limit.signal }).done;
    } finally {
      limit.dispose();
    }
  }

  /**
   * Waits until the kernel answers kernel_info on shell AND its IOPub idle for that request reaches
   * us (so our IOPub subscription is live — no output of the first execution can be lost).
   * Asks again every `pollMs`, keeping earlier requests live, so the first complete answer wins.
   * The wait ends when `signal` fires (see WaitReadyOptions). A kernel that has said nothing at all
   * after `stallMs`, and is not `progressing` (busy starting), is given up on with a
   * StartStalledError (the caller may start another); the message of either failure says what was
   * heard.
   */
  waitReady({
    signal,
    pollMs = 100,
    stallMs = Number.POSITIVE_INFINITY,
    progressing = () => false,
    iopubQuietMs = 2000,
  }: WaitReadyOptions = {}): Promise<KernelInfo> {
    return new Promise((resolve, reject) => {
      const asks: RequestFuture[] = [];
      let done = false;
      let heard = false;
      /** Since the IOPub connection was last made: a shell reply came at, and anything on IOPub. */
      let repliedAt: number | undefined;
      let iopubHeard = false;
      let iopubReconnects = 0;
      const stalled = new AbortController();
      const giveUp = anySignal([signal, stalled.signal]);
      const finish = (err: unknown, info?: KernelInfo) => {
        if (done) return;
        done = true;
        clearInterval(poll);
        clearTimeout(stall);
        giveUp.removeEventListener("abort", onGiveUp);
        for (const f of asks) f.dispose();
        if (info) resolve(info);
        else reject(err);
      };
      const ask = () => {
        // Shell answers, IOPub stays silent: the subscription never joined. Make it again (bounded).
        if (
          !iopubHeard &&
          repliedAt !== undefined &&
          performance.now() - repliedAt >= iopubQuietMs &&
          iopubReconnects < IOPUB_RECONNECTS &&
          this.transport.reconnectIOPub
        ) {
          this.transport.reconnectIOPub();
          iopubReconnects++;
          repliedAt = undefined;
        }
        const future = this.future("shell", this.factory.kernelInfoRequest(), {
          onIOPub: () => {
            heard = true;
            iopubHeard = true;
          },
          onReply: () => {
            heard = true;
            repliedAt ??= performance.now();
          },
          onDone: (reply) => finish(null, { ...toKernelInfo(reply.content), session: reply.header.session }),
        });
        asks.push(future);
      };
      const what = () =>
        asks.some((f) => f.reply !== undefined)
          ? `it answered on shell, but its IOPub status never reached us${
              iopubReconnects ? ` (IOPub connected again ${iopubReconnects} times)` : ""
            }`
          : "no answer on shell or IOPub";
      function onGiveUp() {
        const reason = giveUp.reason;
        finish(
          reason instanceof TimeoutError
            ? new TimeoutError(
                reason.ms,
                `the kernel did not answer kernel_info within ${reason.ms} ms (${what()})`,
              )
            : reason,
        );
      }
      const poll = setInterval(ask, pollMs);
      const stallDelay = Math.min(stallMs, 2 ** 31 - 1);
      const onStall = () => {
        if (heard || done) return;
        if (progressing())
          stall = setTimeout(onStall, stallDelay); // slow, not stuck: keep waiting
        else stalled.abort(new StartStalledError(stallMs));
      };
      let stall = setTimeout(onStall, stallDelay);
      if (giveUp.aborted) return onGiveUp();
      giveUp.addEventListener("abort", onGiveUp, { once: true });
      ask();
    });
  }
}

/** A started kernel process that never answered at all (see waitReady's stallMs). */
export class StartStalledError extends KernelStartError {
  constructor(ms: number) {
    super({ kind: "stalled", ms });
  }
}

export function toKernelInfo(content: Record<string, unknown>): KernelInfo {
  const c = content as {
    protocol_version?: string;
    implementation?: string;
    banner?: string;
    language_info?: {
      name?: string;
      version?: string;
      pygments_lexer?: string;
      codemirror_mode?: string | { name?: string };
    };
  };
  const li = c.language_info ?? {};
  const cm = typeof li.codemirror_mode === "string" ? li.codemirror_mode : li.codemirror_mode?.name;
  return {
    protocolVersion: c.protocol_version ?? "",
    implementation: c.implementation ?? "",
    languageName: li.name ?? "",
    languageVersion: li.version ?? "",
    language: li.pygments_lexer ?? cm ?? li.name ?? "",
    banner: c.banner ?? "",
    languageInfo: c.language_info ? { ...c.language_info } : undefined,
  };
}
