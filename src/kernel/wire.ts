/**
 * The ZeroMQ wire format of Jupyter messages: multipart frames
 *   [routing ids…, "<IDS|MSG>", HMAC signature, header, parent_header, metadata, content, buffers…]
 * signed with HMAC-SHA256 over the four JSON frames (jupyter_client's default scheme).
 * Incoming messages with a bad signature are dropped and counted, never delivered.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { JupyterMessage } from "./types.js";

const DELIMITER = Buffer.from("<IDS|MSG>", "latin1");
const EMPTY = Buffer.alloc(0);

function isDelimiter(frame: Buffer): boolean {
  return frame.length === DELIMITER.length && frame.equals(DELIMITER);
}

export class WireCodec {
  private readonly key: Buffer;
  /** Messages dropped because their signature did not verify. */
  invalidSignatures = 0;
  /** Messages dropped because their frames could not be parsed. */
  malformed = 0;

  constructor(key: string, scheme = "hmac-sha256") {
    if (scheme !== "hmac-sha256") throw new Error(`unsupported signature scheme ${scheme}`);
    this.key = Buffer.from(key, "utf8");
  }

  private sign(parts: Buffer[]): string {
    if (this.key.length === 0) return "";
    const h = createHmac("sha256", this.key);
    for (const p of parts) h.update(p);
    return h.digest("hex");
  }

  /** Frames to send for a message (no routing ids: we talk through DEALER sockets). */
  serialize(msg: JupyterMessage): Buffer[] {
    const parts = [
      Buffer.from(JSON.stringify(msg.header)),
      Buffer.from(JSON.stringify(msg.parent_header ?? {})),
      Buffer.from(JSON.stringify(msg.metadata ?? {})),
      Buffer.from(JSON.stringify(msg.content ?? {})),
    ];
    const frames: Buffer[] = [DELIMITER, Buffer.from(this.sign(parts), "latin1"), ...parts];
    if (msg.buffers)
      for (const b of msg.buffers) frames.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    return frames;
  }

  /** Parses received frames; returns null (and counts) when the message is unsigned-wrong or malformed. */
  deserialize(frames: Buffer[], channel?: JupyterMessage["channel"]): JupyterMessage | null {
    let i = 0;
    while (i < frames.length && !isDelimiter(frames[i])) i++;
    if (frames.length - i < 6) {
      this.malformed++;
      return null;
    }
    const sig = frames[i + 1];
    const header = frames[i + 2];
    const parent = frames[i + 3];
    const metadata = frames[i + 4];
    const content = frames[i + 5];
    if (this.key.length > 0) {
      const h = createHmac("sha256", this.key);
      h.update(header);
      h.update(parent);
      h.update(metadata);
      h.update(content);
      const expected = h.digest();
      const got = sig.length === 64 ? Buffer.from(sig.toString("latin1"), "hex") : EMPTY;
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        this.invalidSignatures++;
        return null;
      }
    }
    try {
      const msg: JupyterMessage = {
        header: JSON.parse(header.toString("utf8")),
        parent_header: JSON.parse(parent.toString("utf8")),
        metadata: JSON.parse(metadata.toString("utf8")),
        content: JSON.parse(content.toString("utf8")),
        channel,
      };
      if (frames.length > i + 6) msg.buffers = frames.slice(i + 6);
      return msg;
    } catch {
      this.malformed++;
      return null;
    }
  }
}
