/**
 * Kernel messages on a Jupyter server's channels WebSocket, in its two framings:
 *
 * - `v1.kernel.websocket.jupyter.org` (binary, offered first): one binary frame per message,
 *     u64le n, then n u64le offsets, then the channel name, header, parent_header, metadata,
 *     content (JSON each) and the buffers; offset[0] is where the channel name starts, offset[i+1]
 *     where part i starts, and the last offset is the end of the frame.
 * - the legacy protocol (no subprotocol): a JSON text frame with a `channel` field, or, when the
 *     message has buffers, a binary frame: u32be n, then n u32be offsets (JSON message first,
 *     then each buffer), then the parts.
 *
 * No signatures: the server signs toward the kernel with its own key.
 */
import type { JupyterMessage } from "../types.js";

export const V1_PROTOCOL = "v1.kernel.websocket.jupyter.org";

export type WsProtocol = "v1" | "json";
type Channel = NonNullable<JupyterMessage["channel"]>;
const CHANNELS = new Set(["shell", "iopub", "stdin", "control"]);

export function encodeMessage(protocol: WsProtocol, channel: Channel, msg: JupyterMessage): Buffer | string {
  return protocol === "v1" ? encodeV1(channel, msg) : encodeLegacy(channel, msg);
}

/** A received frame as a message, or null when it cannot be parsed. */
export function decodeMessage(protocol: WsProtocol, data: Buffer, isBinary: boolean): JupyterMessage | null {
  try {
    if (protocol === "v1" && isBinary) return decodeV1(data);
    if (!isBinary) return fromJson(JSON.parse(data.toString("utf8")));
    return decodeLegacyBinary(data);
  } catch {
    return null;
  }
}

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

export function encodeV1(channel: Channel, msg: JupyterMessage): Buffer {
  const parts = [
    Buffer.from(channel, "utf8"),
    Buffer.from(JSON.stringify(msg.header)),
    Buffer.from(JSON.stringify(msg.parent_header ?? {})),
    Buffer.from(JSON.stringify(msg.metadata ?? {})),
    Buffer.from(JSON.stringify(msg.content ?? {})),
    ...(msg.buffers ?? []).map(toBuffer),
  ];
  const count = parts.length + 1;
  const head = Buffer.alloc(8 * (count + 1));
  head.writeBigUInt64LE(BigInt(count), 0);
  let offset = head.length;
  head.writeBigUInt64LE(BigInt(offset), 8);
  parts.forEach((p, i) => {
    offset += p.length;
    head.writeBigUInt64LE(BigInt(offset), 8 * (i + 2));
  });
  return Buffer.concat([head, ...parts]);
}

export function decodeV1(data: Buffer): JupyterMessage | null {
  const count = Number(data.readBigUInt64LE(0));
  if (count < 6 || 8 * (count + 1) > data.length) return null;
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) offsets.push(Number(data.readBigUInt64LE(8 * (i + 1))));
  const part = (i: number) => data.subarray(offsets[i], offsets[i + 1]);
  for (let i = 0; i + 1 < count; i++)
    if (offsets[i] > offsets[i + 1] || offsets[i + 1] > data.length) return null;
  const channel = part(0).toString("utf8");
  if (!CHANNELS.has(channel)) return null;
  const json = (i: number) => JSON.parse(part(i).toString("utf8"));
  const msg: JupyterMessage = {
    header: json(1),
    parent_header: json(2) ?? {},
    metadata: json(3) ?? {},
    content: json(4) ?? {},
    channel: channel as Channel,
  };
  if (count > 6) {
    msg.buffers = [];
    for (let i = 5; i + 1 < count; i++) msg.buffers.push(Buffer.from(part(i)));
  }
  return msg;
}

function encodeLegacy(channel: Channel, msg: JupyterMessage): Buffer | string {
  const { buffers, ...rest } = msg;
  const body = { ...rest, channel, parent_header: rest.parent_header ?? {}, metadata: rest.metadata ?? {} };
  if (!buffers?.length) return JSON.stringify({ ...body, buffers: [] });
  const parts = [Buffer.from(JSON.stringify(body)), ...buffers.map(toBuffer)];
  const head = Buffer.alloc(4 * (parts.length + 1));
  head.writeUInt32BE(parts.length, 0);
  let offset = head.length;
  parts.forEach((p, i) => {
    head.writeUInt32BE(offset, 4 * (i + 1));
    offset += p.length;
  });
  return Buffer.concat([head, ...parts]);
}

function decodeLegacyBinary(data: Buffer): JupyterMessage | null {
  const n = data.readUInt32BE(0);
  if (n < 1 || 4 * (n + 1) > data.length) return null;
  const offsets: number[] = [];
  for (let i = 0; i < n; i++) offsets.push(data.readUInt32BE(4 * (i + 1)));
  offsets.push(data.length);
  const parts = offsets.slice(0, -1).map((start, i) => data.subarray(start, offsets[i + 1]));
  const msg = fromJson(JSON.parse(parts[0].toString("utf8")));
  if (msg && parts.length > 1) msg.buffers = parts.slice(1).map((p) => Buffer.from(p));
  return msg;
}

function fromJson(raw: Record<string, unknown>): JupyterMessage | null {
  if (!raw || typeof raw !== "object" || !raw.header || typeof raw.channel !== "string") return null;
  if (!CHANNELS.has(raw.channel)) return null;
  const msg: JupyterMessage = {
    header: raw.header as JupyterMessage["header"],
    parent_header: (raw.parent_header as JupyterMessage["parent_header"]) ?? {},
    metadata: (raw.metadata as Record<string, unknown>) ?? {},
    content: (raw.content as Record<string, unknown>) ?? {},
    channel: raw.channel as Channel,
  };
  return msg;
}
