/**
 * A bare Jupyter client for the shared local gateway tests: REST with the token, and one execute over
 * the channels WebSocket (JSON messages), done when the reply AND the idle status have arrived. Kept
 * independent of the gateway backend so these tests check the server itself.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import WebSocket from "ws";
import type { LocalGatewayInfo } from "../../src/kernel/gateway/local-server.js";

export async function rest(
  info: Pick<LocalGatewayInfo, "url" | "token">,
  method: string,
  path: string,
  body?: unknown,
  token: string | undefined = info.token,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${info.url}${path}`, {
    method,
    headers: token ? { Authorization: `token ${token}` } : {},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: res.status, json };
}

export async function createKernel(info: LocalGatewayInfo, path?: string): Promise<string> {
  const r = await rest(info, "POST", "/api/kernels", { name: "python3", ...(path ? { path } : {}) });
  if (r.status !== 201) throw new Error(`POST /api/kernels: ${r.status} ${JSON.stringify(r.json)}`);
  return (r.json as { id: string }).id;
}

export interface Executed {
  status: string;
  text: string;
  error?: { ename: string; evalue: string };
}

/** Runs `code` in kernel `id`; `onOutput` sees each stream text as it arrives (a place to interrupt). */
export function execute(
  info: LocalGatewayInfo,
  id: string,
  code: string,
  onOutput?: (text: string) => void,
): Promise<Executed> {
  const ws = new WebSocket(`${info.url.replace(/^http/, "ws")}/api/kernels/${id}/channels`, {
    headers: { Authorization: `token ${info.token}` },
  });
  const msgId = randomUUID();
  const session = randomUUID();
  let text = "";
  let status: string | undefined;
  let error: Executed["error"];
  let idle = false;
  const send = (msgType: string, content: object, id = randomUUID()) => {
    const header = { msg_id: id, msg_type: msgType, session, username: "test", version: "5.3" };
    ws.send(
      JSON.stringify({
        header: { ...header, date: new Date().toISOString() },
        parent_header: {},
        metadata: {},
        content,
        channel: "shell",
        buffers: [],
      }),
    );
    return id;
  };
  // The server subscribes this connection to IOPub as it opens; output published before that is
  // lost (ZeroMQ's slow joiner). So ask kernel_info until its status comes on IOPub, then execute.
  const probes = new Set<string>();
  let started = false;
  return new Promise((resolve, reject) => {
    ws.on("error", reject);
    ws.on("open", () => probes.add(send("kernel_info_request", {})));
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (!started && probes.has(msg.parent_header?.msg_id)) {
        if (msg.channel === "iopub") {
          started = true;
          send(
            "execute_request",
            { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false },
            msgId,
          );
        } else if (msg.msg_type === "kernel_info_reply") {
          setTimeout(() => {
            if (!started) probes.add(send("kernel_info_request", {}));
          }, 20);
        }
        return;
      }
      if (msg.parent_header?.msg_id !== msgId) return;
      const c = msg.content;
      switch (msg.msg_type) {
        case "stream":
          text += c.text;
          onOutput?.(c.text);
          break;
        case "execute_result":
          text += c.data["text/plain"] ?? "";
          break;
        case "error":
          error = { ename: c.ename, evalue: c.evalue };
          break;
        case "status":
          if (c.execution_state === "idle") idle = true;
          break;
        case "execute_reply":
          status = c.status;
          break;
      }
      if (status !== undefined && idle) {
        ws.close();
        resolve({ status, text, ...(error ? { error } : {}) });
      }
    });
  });
}

/**
 * Pids whose command line holds `marker` as an argument (the gateway's state directory marks its
 * server), or with `prefix`, an argument starting with it (kernels: their connection file's dir).
 */
export function processesWith(marker: string, prefix = false): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z") continue;
      const args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (args.some((a) => a === marker || (prefix && a.startsWith(`${marker}/`)))) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}
