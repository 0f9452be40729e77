/**
 * One MCP server over one toolbox (docs/mcp.md): the toolbox's tools (listed from their descriptors
 * and called through the generic adapter) and its artifacts as resources. Built on the SDK's low-level Server so the tools'
 * own JSON schemas go out as they are.
 */

import { describeToolbox, type Toolbox } from "../tools/index.js";
import { protocolError } from "./errors.js";
import { ARTIFACT_TEMPLATE, readArtifact, SeenArtifacts } from "./resources.js";
import {
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  Server,
} from "./sdk.js";
import { callTool, listedTool } from "./tool-adapter.js";

export interface McpServerOptions {
  toolbox: Toolbox;
  version: string;
  /** Lines for the operator (stderr): unexpected tool failures. */
  log?: (line: string) => void;
}

const INSTRUCTIONS = [
  "nbagent: Jupyter notebooks and live Python kernels.",
  "notebook edits .ipynb files cell by cell and runs their cells in the notebook's own kernel;",
  "python runs code in persistent kernels (state is kept between calls).",
  "Outputs cut short name artifact://<id>: the whole output, readable as a resource.",
].join(" ");

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A tools/call request's params as CallToolRequestSchema has them, checked by hand (the name, the
 * arguments an object if given, the progress token a string or integer if given), or the sentence
 * that says what is wrong (answered as InvalidParams, as the SDK's own check does).
 */
export function toolCallParams(
  params: unknown,
): { name: string; arguments?: Obj; progressToken?: string | number } | string {
  if (!isObject(params)) return "params must be an object";
  if (typeof params.name !== "string") return "params.name must be a string";
  const args = params.arguments;
  if (args !== undefined && !isObject(args)) return "params.arguments must be an object";
  const meta = params._meta;
  if (meta !== undefined && !isObject(meta)) return "params._meta must be an object";
  const token = meta?.progressToken;
  if (token !== undefined && typeof token !== "string" && !Number.isSafeInteger(token))
    return "params._meta.progressToken must be a string or an integer";
  return { name: params.name, arguments: args, progressToken: token as string | number | undefined };
}

export function createMcpServer(options: McpServerOptions): Server {
  const { toolbox, log } = options;
  const seen = new SeenArtifacts();
  const server = new Server(
    { name: "nbagent", title: "nbagent", version: options.version },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: describeToolbox(toolbox).map(listedTool),
  }));

  // tools/call is answered by the fallback handler, which the SDK calls with the request as it came:
  // registered with setRequestHandler, the SDK would parse the request twice with zod on the way
  // (the handler's schema, then CallToolRequestSchema in the Server's tools/call wrapper) and the
  // result once more, each parse costing more than the checks made here (docs/mcp.md, "Cost per
  // call"). Every other method keeps the SDK's own handling.
  server.fallbackRequestHandler = async (request, extra) => {
    if (request.method !== "tools/call") throw protocolError(ErrorCode.MethodNotFound, "Method not found");
    const params = toolCallParams(request.params);
    if (typeof params === "string")
      throw protocolError(ErrorCode.InvalidParams, `Invalid tools/call request: ${params}`);
    const token = params.progressToken;
    return callTool(toolbox.entries, params.name, params.arguments, {
      requestId: extra.requestId,
      signal: extra.signal,
      log,
      onArtifact: (id) => seen.add(id),
      progress:
        token === undefined
          ? undefined
          : (value) => {
              extra
                .sendNotification({
                  method: "notifications/progress",
                  params: { progressToken: token, ...value },
                })
                .catch((err) => log?.(`progress notification not sent: ${(err as Error).message}`));
            },
    });
  };

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [ARTIFACT_TEMPLATE],
  }));
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: seen.list(toolbox.runtime.artifacts),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) =>
    readArtifact(toolbox.runtime.artifacts, request.params.uri),
  );
  return server;
}
