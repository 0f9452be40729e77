/**
 * Where an MCP call's time goes (docs/mcp.md, "Cost per call"): the trivial cell of bench/mcp.ts,
 * through the built `nbagent mcp` (with bench/mcp-timeline-hook.cjs preloaded) and on the tool object
 * in this process (the hook loaded here too, and a view socket served, as there), in pairs as there. Every stamp is on the machine-wide
 * monotonic clock: client send → server stdin → ZeroMQ send of the execute request → last ZeroMQ
 * receive → reply written → client receive → call resolved. Prints the median of each segment.
 * The hooks cost a little themselves; bench/mcp.ts, without them, gives the figures.
 * Run: npm run build && node --import tsx bench/mcp-timeline.ts
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { serveViewSocket } from "../src/view/host.js";
import { mcpSides } from "./mcp.js";
import { arg, median } from "./types.js";

const HOOK = resolve("bench/mcp-timeline-hook.cjs");
createRequire(import.meta.url)(HOOK);
const local = (globalThis as unknown as { __nbagentTimeline: [string, bigint][] }).__nbagentTimeline;
const now = () => process.hrtime.bigint();
const ms = (a: bigint, b: bigint) => Number(b - a) / 1e6;
const PARAMS = { cells: [{ code: "1+1" }] };

const root = mkdtempSync(join(tmpdir(), "nbagent-bench-mcp-timeline-"));
const out = join(root, "server-stamps.txt");
const { toolbox, tool, client, transport } = mcpSides(root, ["--require", HOOK], {
  NBAGENT_TIMELINE_OUT: out,
});
// The direct side is a view host too, as in bench/mcp.ts.
const view = await serveViewSocket(toolbox, "batch", root);
await client.connect(transport);
// The client's own transport, stamped where it writes and where it hands a message on.
let sent = 0n;
let received = 0n;
const send = transport.send.bind(transport);
transport.send = (m: JSONRPCMessage) => {
  sent = now();
  return send(m);
};
const deliver = transport.onmessage!;
transport.onmessage = (m: JSONRPCMessage) => {
  received = now();
  deliver(m);
};

type McpCall = { t0: bigint; sent: bigint; received: bigint; t1: bigint };
type DirectCall = { t0: bigint; t1: bigint; from: number; to: number };
const mcpCalls: McpCall[] = [];
const directCalls: DirectCall[] = [];
const callMcp = async () => {
  const t0 = now();
  await client.callTool({ name: "python", arguments: PARAMS });
  mcpCalls.push({ t0, sent, received, t1: now() });
};
const callTool = async () => {
  const from = local.length;
  const t0 = now();
  await tool.execute("bench", PARAMS);
  directCalls.push({ t0, t1: now(), from, to: local.length });
};
for (let i = 0; i < 20; i++) {
  await callTool();
  await callMcp();
}
mcpCalls.length = 0;
directCalls.length = 0;
const pairs = arg("pairs", 300);
for (let i = 0; i < pairs; i++) {
  for (const call of i % 2 ? [callMcp, callTool] : [callTool, callMcp]) await call();
}
await client.close();
await view?.close();
await toolbox.dispose();
await new Promise((r) => setTimeout(r, 300)); // the server writes its stamps as it exits
const server = readFileSync(out, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => l.split(" "))
  .map(([k, t]) => [k, BigInt(t)] as [string, bigint]);
rmSync(root, { recursive: true, force: true });

const seg = new Map<string, number[]>();
const add = (k: string, v: number) => seg.set(k, [...(seg.get(k) ?? []), v]);
for (const c of mcpCalls) {
  const s = server.filter(([, t]) => t >= c.sent && t <= c.received);
  const first = (k: string) => s.find(([x]) => x === k)?.[1];
  const [input, zs, reply] = [first("in"), first("zs"), first("out")];
  const zr = s.filter(([x, t]) => x === "zr" && reply !== undefined && t < reply).pop()?.[1];
  if (!input || !zs || !zr || !reply) continue; // a heartbeat or a split chunk in between: skipped
  add("MCP: client until its write", ms(c.t0, c.sent));
  add("MCP: pipe to the server", ms(c.sent, input));
  add("MCP: server until the execute request", ms(input, zs));
  add("MCP: kernel (execute request → last message)", ms(zs, zr));
  add("MCP: server until the reply is written", ms(zr, reply));
  add("MCP: pipe back and the client's parse", ms(reply, c.received));
  add("MCP: client until the call resolves", ms(c.received, c.t1));
  add("MCP: total", ms(c.t0, c.t1));
}
for (const c of directCalls) {
  const s = local.slice(c.from, c.to);
  const zs = s.find(([x]) => x === "zs")?.[1];
  const zr = s.filter(([x]) => x === "zr").pop()?.[1];
  if (!zs || !zr) continue;
  add("tool: until the execute request", ms(c.t0, zs));
  add("tool: kernel (execute request → last message)", ms(zs, zr));
  add("tool: until the call resolves", ms(zr, c.t1));
  add("tool: total", ms(c.t0, c.t1));
}
for (const [k, v] of seg) console.log(`${k.padEnd(48)} ${median(v).toFixed(3)} ms  (${v.length} calls)`);
