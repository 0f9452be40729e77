/**
 * MCP over stdio: one JSON-RPC message per line. Unlike the SDK's stdio transport (which closes the
 * connection when its buffer passes 10 MB), a line longer than the limit is skipped and its request
 * answered with an error, and the server keeps serving (docs/mcp.md). Lines are gathered as chunk
 * lists, so a long one is copied once.
 */
import { writeSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { isPlainJsonRpc } from "./jsonrpc-shape.js";
import { ErrorCode, JSONRPCMessageSchema } from "./sdk.js";

/** The largest message accepted (as the SDK's HTTP transport: 4 MiB). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Bytes kept of each end of a line too long to parse, to find its request id. */
const KEEP = 512;

type Id = string | number;

/** The id of a request cut from its line: at its start or its end (where the SDK's client puts it). */
export function findRequestId(head: string, tail: string): Id | undefined {
  const value = String.raw`("id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*"))`;
  const m =
    new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?${value}`).exec(head) ??
    new RegExp(String.raw`,\s*${value}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`).exec(tail);
  if (!m) return undefined;
  return m[2].startsWith('"') ? (JSON.parse(m[2]) as string) : Number(m[2]);
}

export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /**
   * When set, requests the quick check took (a JSON-RPC request as the SDK's schema has it) go here
   * instead of to onmessage: src/mcp/dispatch.ts hands them to the SDK's request dispatch directly.
   */
  onrequest?: (request: JSONRPCRequest) => void;

  private parts: Buffer[] = [];
  private size = 0;
  /** Set while skipping a line past the limit: its first bytes and the last seen. */
  private skipping?: { head: string; tail: Buffer };
  private closed = false;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly maxBytes = MAX_MESSAGE_BYTES,
  ) {}

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.on("close", this.onEnd);
    this.input.on("error", this.onInputError);
  }

  private readonly onInputError = (err: Error) => this.onerror?.(err);
  private readonly onEnd = () => void this.close();

  private readonly onData = (chunk: Buffer) => {
    let pos = 0;
    while (pos < chunk.length) {
      const nl = chunk.indexOf(0x0a, pos);
      const end = nl < 0 ? chunk.length : nl;
      this.take(chunk.subarray(pos, end));
      if (nl < 0) break;
      this.endLine();
      pos = nl + 1;
    }
  };

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.skipping) {
      this.size += piece.length;
      this.skipping.tail = Buffer.concat([this.skipping.tail, piece]).subarray(-KEEP);
      return;
    }
    this.parts.push(piece);
    this.size += piece.length;
    if (this.size > this.maxBytes) {
      const all = Buffer.concat(this.parts);
      this.skipping = { head: all.subarray(0, KEEP).toString("utf8"), tail: all.subarray(-KEEP) };
      this.parts = [];
    }
  }

  private endLine(): void {
    const size = this.size;
    const skipped = this.skipping;
    let line = "";
    if (!skipped) {
      const bytes = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
      const cr = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d; // a CRLF line end
      line = bytes.toString("utf8", 0, cr ? bytes.length - 1 : bytes.length);
    }
    this.parts = [];
    this.size = 0;
    this.skipping = undefined;
    if (skipped) {
      const id = findRequestId(skipped.head, skipped.tail.toString("utf8"));
      const message = `Request too large: ${size} bytes (limit ${this.maxBytes}). Put large data in a file and pass its path.`;
      this.onerror?.(new Error(`skipped a message of ${size} bytes (limit ${this.maxBytes})`));
      if (id !== undefined) this.reply(id, ErrorCode.InvalidRequest, message);
      return;
    }
    if (!line.trim()) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      this.onerror?.(new Error(`not JSON: ${(err as Error).message}`));
      this.reply(null, ErrorCode.ParseError, `Parse error: ${(err as Error).message}`);
      return;
    }
    if (isPlainJsonRpc(json)) {
      if (this.onrequest && "id" in json) this.onrequest(json as JSONRPCRequest);
      else this.onmessage?.(json);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(json);
    if (!parsed.success) {
      const id = (json as { id?: unknown })?.id;
      this.onerror?.(new Error(`not a JSON-RPC message: ${line.slice(0, 200)}`));
      if (typeof id === "string" || typeof id === "number")
        this.reply(id, ErrorCode.InvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
      return;
    }
    this.onmessage?.(parsed.data);
  }

  private reply(id: Id | null, code: number, message: string): void {
    this.write(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } })).catch(() => {});
  }

  /**
   * Writes one line. With nothing queued in the stream, straight to its descriptor (one write(2),
   * without the stream's machinery: docs/mcp.md, "Cost per call"); what that could not write (a
   * full pipe, an error) goes through the stream, which queues it, waits for drain and reports errors.
   */
  private write(text: string): Promise<void> {
    if (this.closed || this.output.destroyed) return Promise.resolve();
    let data = Buffer.from(`${text}\n`, "utf8");
    const fd = (this.output as { fd?: unknown }).fd;
    if (typeof fd === "number" && this.output.writableLength === 0) {
      let written = 0;
      try {
        written = writeSync(fd, data);
      } catch {
        // EAGAIN (a full pipe), EPIPE, …: the stream writes it or reports the error
      }
      if (written === data.length) return Promise.resolve();
      data = data.subarray(written);
    }
    return new Promise((resolve) => {
      if (this.output.write(data)) resolve();
      else this.output.once("drain", resolve);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.off("close", this.onEnd);
    this.input.off("error", this.onInputError);
    this.input.destroy();
    this.onclose?.();
  }
}
