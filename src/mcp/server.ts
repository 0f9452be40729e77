/**
 * One MCP server over one toolbox (docs/mcp.md): the toolbox's tools (listed from their descriptors
 * and called through the generic adapter) and its artifacts as resources. Built on the SDK's low-level Server so the tools'
 * own JSON schemas go out as they are.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  RequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { describeToolbox, type Toolbox } from "../tools/index.js";
import { ARTIFACT_TEMPLATE, readArtifact, SeenArtifacts } from "./resources.js";
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

/**
 * tools/call as any request of that method: the SDK's own check then answers a malformed call
 * (arguments not an object, no name) with InvalidParams instead of failing inside its parser.
 */
const ToolsCallRequestSchema = RequestSchema.extend({ method: CallToolRequestSchema.shape.method });

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

  server.setRequestHandler(ToolsCallRequestSchema, (req, extra) => {
    const request = CallToolRequestSchema.parse(req); // checked by the SDK already
    const token = request.params._meta?.progressToken;
    return callTool(toolbox.entries, request.params.name, request.params.arguments, {
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
  });

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
