/**
 * A kernel client over any transport: routes incoming messages to the request that caused them
 * (by parent_header.msg_id), tracks the kernel's execution_state, and waits for readiness.
 * Messages whose parent is not a live request of ours are dropped (counted), so one request's
 * output never leaks into another's.
 */
import { isMessageType, type MessageFactory } from "./messages.js";
import type { KernelTransport, OutgoingChannel } from "./transport.js";
import type { JupyterMessage, KernelInfo } from "./types.js";

export type RequestHandler = (msg: JupyterMessage) => void;
export type ExecutionState = "starting" | "busy" | "idle" | "dead" | "restarting" | "unknown";

export class KernelClient {
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

  /** Sends a request and routes every message whose parent is it to `handler` until `release`. */
  send(channel: OutgoingChannel, msg: JupyterMessage, handler?: RequestHandler): () => void {
    const id = msg.header.msg_id;
    if (handler) this.handlers.set(id, handler);
    this.transport.send(channel, msg);
    return () => this.handlers.delete(id);
  }

  /**
   * Sends a request and resolves with its reply once both the reply and the IOPub `idle` for it
   * arrived (the S28 rule), or rejects after `timeoutMs`.
   */
  request(channel: OutgoingChannel, msg: JupyterMessage, timeoutMs: number): Promise<JupyterMessage> {
    return new Promise((resolve, reject) => {
      let reply: JupyterMessage | undefined;
      let idle = false;
      const release = this.send(channel, msg, (m) => {
        if (m.channel === channel) reply = m;
        else if (m.channel === "iopub" && isMessageType(m, "status") && m.content.execution_state === "idle")
          idle = true;
        if (reply && idle) {
          clearTimeout(timer);
          release();
          resolve(reply);
        }
      });
      const timer = setTimeout(() => {
        release();
        reject(
          new Error(`Error: no ${msg.header.msg_type.replace("_request", "_reply")} within ${timeoutMs} ms`),
        );
      }, timeoutMs);
    });
  }

  /**
   * Waits until the kernel answers kernel_info on shell AND its IOPub idle for that request reaches
   * us (so our IOPub subscription is live — no output of the first execution can be lost).
   * Asks again every `pollMs`, keeping earlier requests live, so the first complete answer wins.
   * `failed` settles with the reason when the kernel can no longer start (e.g. its process exited).
   * A kernel that has said nothing at all after `stallMs`, and is not `progressing` (busy starting),
   * is given up on with a StartStalledError (the caller may start another); the message of either
   * failure says what was heard.
   */
  waitReady(
    timeoutMs: number,
    failed: Promise<Error>,
    {
      pollMs = 100,
      stallMs = Number.POSITIVE_INFINITY,
      progressing = () => false,
    }: { pollMs?: number; stallMs?: number; progressing?: () => boolean } = {},
  ): Promise<KernelInfo> {
    return new Promise((resolve, reject) => {
      const releases: (() => void)[] = [];
      let done = false;
      let heard = false;
      let replied = false;
      const finish = (err: Error | null, info?: KernelInfo) => {
        if (done) return;
        done = true;
        clearInterval(poll);
        clearTimeout(timer);
        clearTimeout(stall);
        for (const r of releases) r();
        if (err) reject(err);
        else resolve(info!);
      };
      const ask = () => {
        let reply: JupyterMessage | undefined;
        let idle = false;
        const msg = this.factory.kernelInfoRequest();
        releases.push(
          this.send("shell", msg, (m) => {
            heard = true;
            if (m.channel === "shell") reply = m;
            else if (isMessageType(m, "status") && m.content.execution_state === "idle") idle = true;
            replied ||= reply !== undefined;
            if (reply && idle) finish(null, toKernelInfo(reply.content));
          }),
        );
      };
      const what = () =>
        replied
          ? "it answered on shell, but its IOPub status never reached us"
          : "no answer on shell or IOPub";
      const poll = setInterval(ask, pollMs);
      const timer = setTimeout(
        () =>
          finish(
            new Error(`Error: the kernel did not answer kernel_info within ${timeoutMs} ms (${what()})`),
          ),
        timeoutMs,
      );
      const stallDelay = Math.min(stallMs, 2 ** 31 - 1);
      const onStall = () => {
        if (heard || done) return;
        if (progressing())
          stall = setTimeout(onStall, stallDelay); // slow, not stuck: keep waiting
        else
          finish(new StartStalledError(`Error: the kernel said nothing within ${stallMs} ms of its start`));
      };
      let stall = setTimeout(onStall, stallDelay);
      failed.then((err) => finish(err));
      ask();
    });
  }
}

/** A started kernel process that never answered at all (see waitReady's stallMs). */
export class StartStalledError extends Error {}

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
