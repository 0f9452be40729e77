/**
 * The MCP server's overhead: a trivial python cell called through `nbagent mcp` over stdio (the built
 * command, plain node, driven by the official SDK client) against the same call on the tool object
 * in this process, in the same run. Goal (issue 34): median overhead ≤ +0.5 ms a call.
 * Each side has its own kernel; both are warm before timing. Calls go in pairs, one of each side back
 * to back, which goes first alternating, so both sides see the same load (other processes on the
 * machine change it within seconds); each round's medians are kept, and the figures are the medians
 * of the rounds'. Both sides serve a view socket, as `nbagent batch` and `nbagent mcp` do: a viewer
 * on the machine (any `nbagent view`, a test's hub) connects to every host's, and then costs both
 * sides alike. The client's own work (the SDK client until it writes the request, and from the
 * reply's bytes until the call resolves: its zod parses of the reply) is stamped and reported apart.
 * After the rounds, an SDK ping between tool calls gives the floor: what any request costs over this
 * transport with this client, in the same rhythm. Run alone: node --import tsx bench/mcp.ts
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { resolveSettings } from "../src/runtime/settings.js";
import { createToolbox } from "../src/tools/index.js";
import { serveViewSocket } from "../src/view/host.js";
import { arg, type BenchSection, median, row } from "./types.js";

const ROUNDS = arg("rounds", 7);
const PAIRS = arg("pairs", 60);
const PINGS = 200;
const PARAMS = { cells: [{ code: "1+1" }] };

function text(r: unknown): string {
  const first = ((r as { content?: unknown }).content as { type: string; text?: string }[])[0];
  return first?.type === "text" ? (first.text ?? "") : "";
}

const ms = (x: number) => `${x.toFixed(3)} ms`;

/**
 * The two sides every MCP bench compares, both with their state in `root`: the python tool object in
 * this process, and the official SDK client with a stdio transport to the built `nbagent mcp`
 * (`nodeArgs` before the script, e.g. a preloaded hook; `env` added to the server's). Not connected.
 */
export function mcpSides(root: string, nodeArgs: string[] = [], env: Record<string, string> = {}) {
  const toolbox = createToolbox({
    settings: resolveSettings({}, process.env),
    cwd: root,
    runtime: { stateRoot: root },
  });
  const tool = toolbox.tools.find((t) => t.name === "python")!;
  const client = new Client({ name: "nbagent-bench", version: "0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgs, "dist/cli/nbagent.js", "mcp", "--cwd", root],
    env: { ...(process.env as Record<string, string>), NBAGENT_STATE_DIR: root, ...env },
    stderr: "inherit",
  });
  return { toolbox, tool, client, transport };
}

export async function run(): Promise<BenchSection> {
  if (!existsSync("dist/cli/nbagent.js")) throw new Error("build first: npm run build");
  const root = mkdtempSync(join(tmpdir(), "nbagent-bench-mcp-"));
  const { toolbox, tool, client, transport } = mcpSides(root);
  // The direct side is a view host too, as `nbagent batch` is (the server is one).
  const view = await serveViewSocket(toolbox, "batch", root);
  const rounds: { mcp: number; server: number; direct: number; diff: number; client: number }[] = [];
  const pings: number[] = [];
  try {
    await client.connect(transport);
    // The client's own work, stamped: until its transport writes the request, and from the first
    // bytes of the reply (before the SDK's transport parses them) until the call resolves.
    let sent = 0;
    let arrived = 0;
    const send = transport.send.bind(transport);
    transport.send = (m) => {
      sent = performance.now();
      return send(m);
    };
    const stdout = (transport as unknown as { _process: { stdout: NodeJS.ReadableStream } })._process.stdout;
    stdout.prependListener("data", () => {
      arrived ||= performance.now();
    });
    const callTool = async () => {
      const t0 = performance.now();
      const r = await tool.execute("bench", PARAMS);
      const took = performance.now() - t0;
      if (r.isError || text(r) !== "2") throw new Error(`tool call failed: ${text(r)}`);
      return took;
    };
    const callMcp = async () => {
      arrived = 0;
      const t0 = performance.now();
      const r = await client.callTool({ name: "python", arguments: PARAMS });
      const t1 = performance.now();
      if (r.isError || text(r) !== "2") throw new Error(`MCP call failed: ${text(r)}`);
      return { took: t1 - t0, client: sent - t0 + (t1 - arrived) };
    };
    for (let i = 0; i < 20; i++) {
      await callTool(); // kernel start, warm-up
      await callMcp();
    }
    for (let round = 0; round < ROUNDS; round++) {
      const mcp: { took: number; client: number }[] = [];
      const direct: number[] = [];
      for (let i = 0; i < PAIRS; i++) {
        if ((round + i) % 2) {
          mcp.push(await callMcp());
          direct.push(await callTool());
        } else {
          direct.push(await callTool());
          mcp.push(await callMcp());
        }
      }
      const server = mcp.map((m) => m.took - m.client);
      rounds.push({
        mcp: median(mcp.map((m) => m.took)),
        server: median(server),
        direct: median(direct),
        diff: median(server.map((m, i) => m - direct[i])),
        client: median(mcp.map((m) => m.client)),
      });
    }
    for (let i = 0; i < PINGS; i++) {
      await callTool(); // the same rhythm: the server waits a tool call's time between requests
      const t0 = performance.now();
      await client.ping();
      pings.push(performance.now() - t0);
    }
  } finally {
    await client.close();
    await view?.close();
    await toolbox.dispose();
    rmSync(root, { recursive: true, force: true });
  }
  const mcp = median(rounds.map((r) => r.mcp));
  const server = median(rounds.map((r) => r.server));
  const direct = median(rounds.map((r) => r.direct));
  const diffs = rounds.map((r) => r.diff);
  const clientShare = median(rounds.map((r) => r.client));
  return {
    title: "MCP server over stdio (vs the tool object, same run)",
    rows: [
      // The goal bounds the server's overhead (issue 34: ≤ +0.5 ms a call), against the call measured
      // here: each MCP call's round trip less the SDK client's own work in it, which only this side
      // has (a client of `nbagent batch` reads a line; this one also runs the SDK's zod parses).
      row("trivial cell: MCP call less the client's work vs tool call", server, direct, "ms", "≤ +0.5 ms"),
      row("trivial cell: MCP round trip (SDK client) vs tool call", mcp, direct, "ms", "—"),
    ],
    notes: [
      `MCP server's overhead per call: ${ms(server - direct)} (median of the rounds' median MCP calls less the client's own work − of their median tool calls); the median of the rounds' median paired differences: ${ms(median(diffs))} (rounds: ${diffs.map((d) => d.toFixed(2)).join(", ")})`,
      `with the SDK client's own work: ${ms(mcp - direct)} (its work, ${ms(clientShare)} a call: until it writes the request, and from the reply's first bytes until the call resolves; median of the rounds' medians)`,
      `floor: an SDK ping round trip between tool calls, median ${ms(median(pings))} (${PINGS} pings) — the two pipe hops and the SDK's handling at both ends, which every request pays`,
      `${ROUNDS} rounds of ${PAIRS} pairs (one call of each side back to back, which goes first alternating) after 20 warm-up calls each; each side has its own warm kernel`,
      "server: node dist/cli/nbagent.js mcp (the built command); client: the official SDK client, no progress token; both sides serve a view socket",
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`)
  run().then((s) => console.log(JSON.stringify(s, null, 2)));
