/**
 * Test fixtures for the view's streams: a host whose runtime is an event bus alone (no kernel), and
 * a reader of a Server-Sent Events response.
 */
import type { TestContext } from "node:test";
import { EventBus } from "../../src/runtime/events.js";
import type { Toolbox } from "../../src/tools/index.js";
import { serveViewSocket, type ViewHost } from "../../src/view/host.js";

/** A host's view socket over a bare event bus (closed after the test); undefined: no socket root here. */
export async function busHost(t: TestContext): Promise<{ bus: EventBus; host: ViewHost } | undefined> {
  const bus = new EventBus();
  const toolbox = {
    runtime: { events: bus, listKernels: () => ({ sessions: [] }) },
    runs: { running: () => [] },
  } as unknown as Toolbox;
  const host = await serveViewSocket(toolbox, "mcp-stdio", "/");
  if (!host) return undefined;
  t.after(() => host.close());
  return { bus, host };
}

/** Reads an SSE response to its end: each event's name (`message` when unnamed) and its data, parsed; blocks without data are skipped. */
export async function readEvents(res: Response, on: (event: string, data: unknown) => void): Promise<void> {
  let buf = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += Buffer.from(chunk).toString("utf8");
    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
      const lines = buf.slice(0, i).split("\n");
      buf = buf.slice(i + 2);
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
      if (data.length > 0) on(event, JSON.parse(data.join("\n"))); // (a block without data: a comment)
    }
  }
}
