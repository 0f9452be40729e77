/**
 * A quick check that a parsed line is a JSON-RPC message as the SDK's JSONRPCMessageSchema has it,
 * for what a client sends most (requests and notifications with nothing beyond their own keys and
 * at most a progress token in `_meta`): it says yes only to what that schema accepts as it is, and
 * the caller asks the schema about anything else (responses, other `_meta`, anything odd). The
 * schema's parse (a union of four strict objects) is ~2 µs in a loop and several times that in a
 * server whose caches went cold while the kernel ran; this is a few property checks
 * (docs/mcp.md, "Cost per call").
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isId(v: unknown): boolean {
  return typeof v === "string" || Number.isSafeInteger(v);
}

/** Only the keys listed (the schemas are strict). */
function only(o: Obj, keys: readonly string[]): boolean {
  for (const k in o) if (!keys.includes(k)) return false;
  return true;
}

/** Request/notification params: an object whose `_meta`, if any, has at most a valid progress token. */
function plainParams(p: unknown): boolean {
  if (p === undefined) return true;
  if (!isObject(p)) return false;
  const meta = p._meta;
  if (meta === undefined) return true;
  return (
    isObject(meta) &&
    only(meta, ["progressToken"]) &&
    (meta.progressToken === undefined || isId(meta.progressToken))
  );
}

const REQUEST = ["jsonrpc", "id", "method", "params"];
const NOTIFICATION = ["jsonrpc", "method", "params"];

/** True only for a message JSONRPCMessageSchema accepts as it is; false means "ask the schema". */
export function isPlainJsonRpc(v: unknown): v is JSONRPCMessage {
  if (!isObject(v) || v.jsonrpc !== "2.0") return false;
  if (typeof v.method !== "string" || !plainParams(v.params)) return false;
  return "id" in v ? isId(v.id) && only(v, REQUEST) : only(v, NOTIFICATION);
}
