/**
 * What the MCP server takes from the SDK at run time, in one module. The built CLI keeps the SDK
 * (and zod, ajv and hono behind it: a third of the functions of the whole command) in a bundle of
 * its own, `dist/cli/nbagent-mcp-sdk-<hash>.cjs`, loaded with its code cache only by `nbagent mcp`:
 * every other command then starts without them (scripts/bundle.mjs; docs/architecture.md, "How the
 * built command starts"). Types come from the SDK's own paths (`import type`), which leave nothing.
 */
export { Server } from "@modelcontextprotocol/sdk/server/index.js";
export { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
export {
  ErrorCode,
  JSONRPCMessageSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
