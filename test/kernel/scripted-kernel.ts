/**
 * A kernel played by the test (for the execution rules' unit tests): a KernelTransport that records
 * what the client sends and lets the test answer each request with the child messages a rule needs,
 * in an order, or not at all, that a real ipykernel cannot be made to produce on demand.
 */
import type { JupyterMessage, KernelTransport, OutgoingChannel } from "../../src/kernel/index.js";

export type Sent = { channel: OutgoingChannel; msg: JupyterMessage };

export class ScriptedKernel implements KernelTransport {
  readonly sent: Sent[] = [];
  private deliver: (msg: JupyterMessage) => void = () => {};
  /** Called on each message sent, with a way to answer it. */
  onSend: (s: Sent) => void = () => {};

  /** `answerLater`: onSend runs in a microtask after the send returns (as a socket would deliver). */
  constructor(private readonly options: { answerLater?: boolean } = {}) {}

  send(channel: OutgoingChannel, msg: JupyterMessage): void {
    const s = { channel, msg };
    this.sent.push(s);
    if (this.options.answerLater) queueMicrotask(() => this.onSend(s));
    else this.onSend(s);
  }
  onMessage(handler: (msg: JupyterMessage) => void): void {
    this.deliver = handler;
  }
  onLost(): void {}
  stats() {
    return { invalidSignatures: 0, malformed: 0 };
  }
  async close(): Promise<void> {}

  /** A message from the kernel on `channel`, child of `parent`. */
  answer(
    parent: JupyterMessage,
    channel: "shell" | "iopub" | "stdin" | "control",
    msgType: string,
    content: Record<string, unknown>,
    metadata: Record<string, unknown> = {},
  ): void {
    this.deliver({
      header: {
        msg_id: `k-${Math.random()}`,
        msg_type: msgType,
        session: "kernel",
        username: "k",
        date: new Date().toISOString(),
        version: "5.3",
      },
      parent_header: parent.header,
      metadata,
      content,
      channel,
    });
  }
  busy(parent: JupyterMessage): void {
    this.answer(parent, "iopub", "status", { execution_state: "busy" });
  }
  idle(parent: JupyterMessage): void {
    this.answer(parent, "iopub", "status", { execution_state: "idle" });
  }
  print(parent: JupyterMessage, text: string): void {
    this.answer(parent, "iopub", "stream", { name: "stdout", text });
  }
  reply(
    parent: JupyterMessage,
    content: Record<string, unknown> = { status: "ok", execution_count: 1 },
    metadata: Record<string, unknown> = {},
  ): void {
    this.answer(parent, "shell", "execute_reply", content, metadata);
  }
  /** An execute_reply of status error (the code raised), with this execution count. */
  replyError(parent: JupyterMessage, count = 1): void {
    this.reply(parent, { status: "error", execution_count: count, ename: "E", evalue: "bad", traceback: [] });
  }
  /** The execute_requests sent so far. */
  requests(): JupyterMessage[] {
    return this.sent.filter((s) => s.msg.header.msg_type === "execute_request").map((s) => s.msg);
  }
  /** How many interrupt_requests were sent. */
  interrupts(): number {
    return this.sent.filter((s) => s.msg.header.msg_type === "interrupt_request").length;
  }
}
