/**
 * One request to a kernel and everything it causes, and the one place the completion rule lives
 * (docs/python-tool.md): a request is done when BOTH its reply (on the channel it was sent on) and the IOPub
 * `status: idle` whose parent is it have arrived, in either order. Until then every message whose
 * parent is this request (iopub, the reply, stdin's input_request) goes to its hooks and to nothing
 * else. Disposing it early (the caller gave up, the kernel is being restarted) stops the routing:
 * a late reply or idle of a released request reaches no one.
 */
import { isMessageType } from "./messages.js";
import type { OutgoingChannel } from "./transport.js";
import type { JupyterMessage } from "./types.js";

/** What a future needs from the client: send, and deliver messages whose parent is a msg_id. */
export interface FutureRouter {
  send(channel: OutgoingChannel, msg: JupyterMessage): void;
  /** Routes every incoming message whose parent_header.msg_id is `msgId` to `handler`, until the returned release. */
  route(msgId: string, handler: (msg: JupyterMessage) => void): () => void;
}

export interface FutureHooks {
  /** Every IOPub message of this request, in arrival order (its busy/idle status included). */
  onIOPub?(msg: JupyterMessage): void;
  /** The reply, on the request's own channel. */
  onReply?(msg: JupyterMessage): void;
  /** A stdin message of this request (input_request). */
  onStdin?(msg: JupyterMessage): void;
  /** Reply and idle have both arrived: runs once, synchronously, just before `done` resolves. */
  onDone?(reply: JupyterMessage): void;
}

/** `done` of a future that was disposed before its reply and idle both arrived. */
export class FutureDisposedError extends Error {
  constructor(msgType: string) {
    super(`the ${msgType} was released before its reply and idle arrived`);
    this.name = "FutureDisposedError";
  }
}

export interface FutureOptions {
  /** Gives up: the future is disposed and `done` rejects with the signal's reason. */
  signal?: AbortSignal;
}

export class RequestFuture {
  readonly msg: JupyterMessage;
  readonly channel: OutgoingChannel;
  /** Resolves with the reply once reply and idle both arrived; rejects if disposed or aborted first. */
  readonly done: Promise<JupyterMessage>;
  private replyMsg?: JupyterMessage;
  private idleSeen = false;
  private completed = false;
  private routing = true;
  private readonly hooks: FutureHooks;
  private readonly release: () => void = () => {};
  private readonly signal?: AbortSignal;
  private resolveDone!: (reply: JupyterMessage) => void;
  private rejectDone!: (err: unknown) => void;

  /** Sends `msg` on `channel` and starts routing its messages (a future is live from birth). */
  constructor(
    router: FutureRouter,
    channel: OutgoingChannel,
    msg: JupyterMessage,
    hooks: FutureHooks = {},
    options: FutureOptions = {},
  ) {
    this.msg = msg;
    this.channel = channel;
    this.hooks = hooks;
    this.done = new Promise<JupyterMessage>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // Callers that only dispose (and never await `done`) must not see an unhandled rejection.
    this.done.catch(() => {});
    this.signal = options.signal;
    if (this.signal?.aborted) {
      // Given up before it was sent: nothing goes to the kernel.
      this.routing = false;
      this.rejectDone(this.signal.reason);
      return;
    }
    this.signal?.addEventListener("abort", this.onAbort, { once: true });
    this.release = router.route(msg.header.msg_id, (m) => this.handle(m));
    router.send(channel, msg);
  }

  /** The reply, once it arrived. */
  get reply(): JupyterMessage | undefined {
    return this.replyMsg;
  }

  /** This request's IOPub `status: idle` arrived. */
  get idle(): boolean {
    return this.idleSeen;
  }

  /** Reply and idle both arrived (`done` resolved). */
  get isDone(): boolean {
    return this.completed;
  }

  /** No more messages are routed to the hooks (done, disposed, or aborted). */
  get isDisposed(): boolean {
    return !this.routing;
  }

  /** Stops routing this request's messages; `done` rejects with FutureDisposedError unless it was done. */
  dispose(): void {
    // The error only for a `done` still pending: an Error's stack costs ~30 µs, and every completed
    // request is disposed too.
    if (this.routing)
      this.stop(this.completed ? undefined : new FutureDisposedError(this.msg.header.msg_type));
  }

  private readonly onAbort = () => this.stop(this.signal?.reason);

  private stop(reason: unknown): void {
    if (!this.routing) return;
    this.routing = false;
    this.release();
    this.signal?.removeEventListener("abort", this.onAbort);
    if (!this.completed) this.rejectDone(reason);
  }

  private handle(msg: JupyterMessage): void {
    if (!this.routing) return;
    if (msg.channel === "iopub") {
      this.hooks.onIOPub?.(msg);
      if (isMessageType(msg, "status") && msg.content.execution_state === "idle") this.idleSeen = true;
    } else if (msg.channel === this.channel) {
      this.replyMsg = msg;
      this.hooks.onReply?.(msg);
    } else if (msg.channel === "stdin") {
      this.hooks.onStdin?.(msg);
    }
    // A hook may have disposed the future (its caller gave up on what it saw).
    if (!this.routing || !this.replyMsg || !this.idleSeen) return;
    const reply = this.replyMsg;
    this.completed = true;
    this.stop(undefined); // done: nothing more of this request is wanted
    this.hooks.onDone?.(reply);
    this.resolveDone(reply);
  }
}
