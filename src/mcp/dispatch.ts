/**
 * Requests straight to the SDK's request dispatch (docs/mcp.md, "Cost per call"). The SDK's Protocol,
 * once connected, reads every message by asking its zod schemas in turn whether it is a result, an
 * error or a request: for a request, two parses that fail (each building an error with its issues)
 * before the one that succeeds, ~15 µs in a loop and ~30 µs in a server whose caches went cold while
 * the kernel ran. The line transport's quick check (src/mcp/jsonrpc-shape.ts) already knows a plain
 * request as the SDK's schema has it, and such a message takes the request branch of the SDK's
 * handler; it is handed to the Protocol's own `_onrequest` (handler lookup, the AbortController,
 * the reply) as that branch would. Everything else (responses, notifications, anything the quick
 * check leaves to the schema) still goes through the SDK's handler.
 */
import type { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { LineTransport } from "./stdio-transport.js";

type Dispatch = (request: JSONRPCRequest, extra?: unknown) => void;

/**
 * After `server.connect(transport)`: routes the transport's plain requests to the server's request
 * dispatch. False (nothing changed, every message takes the SDK's path) when the SDK has no such
 * method under that name (another version of it).
 */
export function dispatchRequestsDirectly(
  // biome-ignore lint/suspicious/noExplicitAny: any Protocol (Server) whatever its types
  server: Protocol<any, any, any>,
  transport: LineTransport,
): boolean {
  const onrequest = (server as unknown as { _onrequest?: unknown })._onrequest;
  if (typeof onrequest !== "function") return false;
  transport.onrequest = (request) => (onrequest as Dispatch).call(server, request, undefined);
  return true;
}
