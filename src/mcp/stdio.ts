/**
 * `nbagent mcp` over stdio: one toolbox (one runtime, its kernels) for the life of the process.
 * It ends when stdin ends or on SIGTERM / SIGINT; in-flight calls are cancelled (their kernels
 * interrupted) and every kernel is shut down before the process exits (docs/mcp.md).
 */
import type { Settings } from "../runtime/settings.js";
import { createToolbox } from "../tools/index.js";
import { serveViewSocket } from "../view/host.js";
import { dispatchRequestsDirectly } from "./dispatch.js";
import { createMcpServer } from "./server.js";
import { LineTransport } from "./stdio-transport.js";

export interface StdioOptions {
  cwd: string;
  /** The settings the CLI resolved (runtime/settings.ts). */
  settings: Settings;
  version: string;
  log: (line: string) => void;
}

export async function serveStdio(options: StdioOptions): Promise<number> {
  const toolbox = createToolbox({ cwd: options.cwd, settings: options.settings });
  const server = createMcpServer({ toolbox, version: options.version, log: options.log });
  // Seen by `nbagent view` (docs/view.md).
  const view = await serveViewSocket(toolbox, "mcp-stdio", options.cwd);
  const transport = new LineTransport(process.stdin, process.stdout);
  let signals = 0;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const onSignal = (sig: NodeJS.Signals) => {
    if (++signals > 1) process.exit(sig === "SIGINT" ? 130 : 143);
    stop();
  };
  const onStdoutError = (err: Error) => {
    options.log(`stdout: ${err.message}`);
    stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.stdout.on("error", onStdoutError);
  server.onclose = () => stop();
  transport.onerror = (err) => options.log(err.message);
  try {
    await server.connect(transport);
    dispatchRequestsDirectly(server, transport);
    await stopped;
  } finally {
    await server.close(); // aborts calls still running: their kernels are interrupted
    await view?.close();
    await toolbox.dispose();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.stdout.off("error", onStdoutError);
  }
  return 0;
}
