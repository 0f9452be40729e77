/**
 * Shared helpers for the MCP tests: `nbagent mcp` started as a user's client starts it (the official
 * SDK client over stdio, or the HTTP server and SDK clients over Streamable HTTP), and small readers
 * for results. The server runs as test/cli.ts starts the CLI unless a command is given.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { LineTransport } from "../../src/mcp/stdio-transport.js";
import { cliCommand } from "../cli.js";

export { marker, pidsWithEnv, ROOT, readNb, tempDir, validate, writeNb } from "../run/helpers.js";

/** `nbagent` as the tests run it (test/cli.ts: the fresh bundle, or the source through tsx). */
export const FROM_SOURCE = cliCommand();

export function newClient(): Client {
  return new Client({ name: "nbagent-test", version: "0" });
}

export interface StdioServer {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
}

/** `nbagent mcp` over stdio through the SDK's StdioClientTransport. */
export async function stdioServer(
  args: string[],
  env: Record<string, string> = {},
  command: string[] = FROM_SOURCE,
): Promise<StdioServer> {
  const [cmd, ...pre] = command;
  const transport = new StdioClientTransport({
    command: cmd,
    args: [...pre, "mcp", ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (d: Buffer) => {
    err += d.toString("utf8");
  });
  const client = newClient();
  await client.connect(transport);
  return { client, transport, stderr: () => err };
}

/** `nbagent mcp` over stdio on a child the test owns (to end its stdin or signal it itself). */
export async function ownedStdioServer(
  args: string[],
  env: Record<string, string> = {},
): Promise<{
  client: Client;
  child: ChildProcessWithoutNullStreams;
  exited: Promise<[number | null, string | null]>;
}> {
  const [cmd, ...pre] = FROM_SOURCE;
  const child = spawn(cmd, [...pre, "mcp", ...args], { env: { ...process.env, ...env }, stdio: "pipe" });
  child.stderr.resume();
  const exited = new Promise<[number | null, string | null]>((resolve) =>
    child.on("exit", (code, signal) => resolve([code, signal])),
  );
  const client = newClient();
  await client.connect(new LineTransport(child.stdout, child.stdin));
  return { client, child, exited };
}

export interface HttpServer {
  url: URL;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exited: Promise<[number | null, string | null]>;
}

/** `nbagent mcp --http --port 0`; resolves once it prints where it listens. */
export async function httpServer(
  args: string[],
  env: Record<string, string> = {},
  command: string[] = FROM_SOURCE,
): Promise<HttpServer> {
  const [cmd, ...pre] = command;
  const child = spawn(cmd, [...pre, "mcp", "--http", "--port", "0", ...args], {
    env: { ...process.env, ...env },
    stdio: "pipe",
  });
  child.stdout.resume();
  let err = "";
  const exited = new Promise<[number | null, string | null]>((resolve) =>
    child.on("exit", (code, signal) => resolve([code, signal])),
  );
  const url = await new Promise<URL>((resolve, reject) => {
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString("utf8");
      const m = /listening on (\S+)/.exec(err);
      if (m) resolve(new URL(m[1]));
    });
    exited.then(([code]) => reject(new Error(`nbagent mcp --http exited (${code}): ${err}`)));
  });
  return { url, child, stderr: () => err, exited };
}

export async function httpClient(url: URL, headers: Record<string, string>): Promise<Client> {
  const client = newClient();
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

/** The text parts of a tool result, joined. */
export function textOf(result: unknown): string {
  return ((result as CallToolResult).content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => (c as { text: string }).text)
    .join("\n");
}
