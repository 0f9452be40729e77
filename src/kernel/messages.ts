/**
 * Jupyter messaging protocol (v5.3+): message types as unions keyed by msg_type, and builders.
 * Wire encoding lives in wire.ts; this file knows nothing about transports.
 */
import { randomUUID } from "node:crypto";
import type { JupyterMessage } from "./types.js";

export const PROTOCOL_VERSION = "5.3";

export type Channel = "shell" | "iopub" | "stdin" | "control";
export type Header = JupyterMessage["header"];

export type MimeBundle = {
  [mime: string]: unknown;
};

// ---- content shapes -------------------------------------------------------------------------

export type ExecuteRequestContent = {
  code: string;
  silent: boolean;
  store_history: boolean;
  user_expressions: Record<string, string>;
  allow_stdin: boolean;
  stop_on_error: boolean;
};
export type ExecuteReplyContent = {
  status: "ok" | "error" | "aborted";
  execution_count: number | null;
  ename?: string;
  evalue?: string;
  traceback?: string[];
  [key: string]: unknown;
};
export type KernelInfoReplyContent = {
  status: "ok" | "error";
  protocol_version: string;
  implementation: string;
  implementation_version?: string;
  language_info: {
    name: string;
    version?: string;
    mimetype?: string;
    file_extension?: string;
    pygments_lexer?: string;
    codemirror_mode?: string | { name?: string; [key: string]: unknown };
    [key: string]: unknown;
  };
  banner?: string;
  [key: string]: unknown;
};
export type StatusContent = {
  execution_state: "busy" | "idle" | "starting" | "dead" | "restarting";
};
export type StreamContent = {
  name: "stdout" | "stderr";
  text: string;
};
export type DisplayDataContent = {
  data: MimeBundle;
  metadata: Record<string, unknown>;
  transient?: { display_id?: string; [key: string]: unknown };
};
export type ExecuteResultContent = DisplayDataContent & {
  execution_count: number | null;
};
export type ExecuteInputContent = {
  code: string;
  execution_count: number;
};
export type ErrorContent = {
  ename: string;
  evalue: string;
  traceback: string[];
};
export type ClearOutputContent = {
  wait: boolean;
};
export type InputRequestContent = {
  prompt: string;
  password: boolean;
};
export type InputReplyContent = {
  value: string;
};
export type ShutdownContent = {
  restart: boolean;
};
export type EmptyContent = Record<string, never>;

// ---- messages keyed by msg_type -----------------------------------------------------------------

export interface Message<T extends string, C> extends JupyterMessage<C> {
  header: Header & { msg_type: T };
}

export type ShellRequest =
  | Message<"execute_request", ExecuteRequestContent>
  | Message<"kernel_info_request", EmptyContent>;
export type ShellReply =
  | Message<"execute_reply", ExecuteReplyContent>
  | Message<"kernel_info_reply", KernelInfoReplyContent>;
export type ControlMessage =
  | Message<"interrupt_request", EmptyContent>
  | Message<"interrupt_reply", { status: string }>
  | Message<"shutdown_request", ShutdownContent>
  | Message<"shutdown_reply", ShutdownContent & { status?: string }>;
export type IOPubMessage =
  | Message<"status", StatusContent>
  | Message<"stream", StreamContent>
  | Message<"display_data", DisplayDataContent>
  | Message<"update_display_data", DisplayDataContent>
  | Message<"execute_result", ExecuteResultContent>
  | Message<"execute_input", ExecuteInputContent>
  | Message<"error", ErrorContent>
  | Message<"clear_output", ClearOutputContent>;
export type StdinMessage =
  | Message<"input_request", InputRequestContent>
  | Message<"input_reply", InputReplyContent>;
export type KnownMessage = ShellRequest | ShellReply | ControlMessage | IOPubMessage | StdinMessage;
export type MessageType = KnownMessage["header"]["msg_type"];
export type ContentOf<T extends MessageType> = Extract<KnownMessage, { header: { msg_type: T } }>["content"];
export type MessageOf<T extends MessageType> = Extract<KnownMessage, { header: { msg_type: T } }>;

/** Narrows a raw message to the union member for its msg_type. */
export function isMessageType<T extends MessageType>(msg: JupyterMessage, type: T): msg is MessageOf<T> {
  return msg.header.msg_type === type;
}

// ---- builders -----------------------------------------------------------------------------------

/** A client session: the session id and a cheap, unique msg_id sequence (as jupyter_client does). */
export class MessageFactory {
  readonly session: string;
  readonly username: string;
  private counter = 0;
  private readonly prefix: string;

  constructor(session: string = randomUUID(), username = "nbagent") {
    this.session = session;
    this.username = username;
    this.prefix = `${session.slice(0, 8)}_${process.pid}_`;
  }

  nextMsgId(): string {
    this.counter += 1;
    return this.prefix + this.counter;
  }

  create<T extends MessageType>(
    msgType: T,
    content: ContentOf<T>,
    channel: Channel,
    parent: Partial<Header> = {},
  ): MessageOf<T> {
    return {
      header: {
        msg_id: this.nextMsgId(),
        msg_type: msgType,
        session: this.session,
        username: this.username,
        date: new Date().toISOString(),
        version: PROTOCOL_VERSION,
      },
      parent_header: parent,
      metadata: {},
      content,
      channel,
    } as MessageOf<T>;
  }

  executeRequest(
    code: string,
    opts: {
      silent?: boolean;
      storeHistory?: boolean;
      allowStdin?: boolean;
      stopOnError?: boolean;
      /** The request's own metadata (ipykernel reads `cellId`; nbagent's guard `nbagent_after`). */
      metadata?: Record<string, unknown>;
    } = {},
  ): MessageOf<"execute_request"> {
    const silent = opts.silent ?? false;
    const msg = this.create(
      "execute_request",
      {
        code,
        silent,
        store_history: opts.storeHistory ?? !silent,
        user_expressions: {},
        allow_stdin: opts.allowStdin ?? true,
        stop_on_error: opts.stopOnError ?? true,
      },
      "shell",
    );
    if (opts.metadata) msg.metadata = opts.metadata;
    return msg;
  }

  kernelInfoRequest(): MessageOf<"kernel_info_request"> {
    return this.create("kernel_info_request", {} as EmptyContent, "shell");
  }

  interruptRequest(): MessageOf<"interrupt_request"> {
    return this.create("interrupt_request", {} as EmptyContent, "control");
  }

  shutdownRequest(restart = false): MessageOf<"shutdown_request"> {
    return this.create("shutdown_request", { restart }, "control");
  }

  inputReply(value: string, parent: Header): MessageOf<"input_reply"> {
    return this.create("input_reply", { value }, "stdin", parent);
  }
}
