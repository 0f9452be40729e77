/**
 * A gateway URL that is a JupyterHub user server (`http://hub/[prefix/]user/NAME/[SERVER/]`,
 * docs/backends.md "JupyterHub"): when an answer comes from the hub instead of the user's server (the
 * server is not running, is starting or stopping, or the token is refused), the hub's REST API says
 * which, as a typed value (HubServerState) that tools/failure-text.ts words; and a server that is
 * starting is waited for through the hub's progress stream, so a call made while it starts goes on.
 */
import http from "node:http";
import https from "node:https";
import type { HubServerState } from "../errors.js";

/** Where a user server's hub is: its REST API, the user and the server's name ("" the default). */
export interface HubAddress {
  /** `http://host[/prefix]/hub/` */
  hub: URL;
  user: string;
  server: string;
}

/** The hub of a gateway URL whose path ends in `user/NAME/` or `user/NAME/SERVER/`; else undefined. */
export function hubOf(base: URL): HubAddress | undefined {
  const m = /^(.*\/)user\/([^/]+)\/(?:([^/]+)\/)?$/.exec(base.pathname);
  if (!m) return undefined;
  const hub = new URL(base.href);
  hub.pathname = `${m[1]}hub/`;
  return { hub, user: decodeURIComponent(m[2]), server: m[3] ? decodeURIComponent(m[3]) : "" };
}

/** The header every JupyterHub answer carries (the hub's and its single-user servers'). */
export const HUB_HEADER = "x-jupyterhub-version";

interface HubRequest {
  headers: Record<string, string>;
  ca?: string | Buffer;
  signal?: AbortSignal;
  timeoutMs: number;
}

/** GET one of the hub's API paths; the status and the parsed JSON (undefined: no answer at all). */
function get(
  url: URL,
  o: HubRequest,
  onData?: (chunk: string) => boolean,
): Promise<{ status: number; json: unknown } | undefined> {
  return new Promise((resolve) => {
    const mod = url.protocol === "https:" ? https : http;
    let done = false;
    const finish = (v: { status: number; json: unknown } | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", abort);
      req.destroy();
      resolve(v);
    };
    const abort = () => finish(undefined);
    const timer = setTimeout(abort, o.timeoutMs);
    const req = mod.request(
      url,
      { method: "GET", headers: { Accept: "application/json", ...o.headers }, ca: o.ca, agent: false },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          if (onData && res.statusCode === 200) {
            if (onData(c)) finish({ status: 200, json: undefined });
          } else body += c;
        });
        res.on("error", () => finish(undefined));
        res.on("end", () => {
          let json: unknown;
          try {
            json = body ? JSON.parse(body) : undefined;
          } catch {
            json = undefined;
          }
          finish({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on("error", () => finish(undefined));
    if (o.signal?.aborted) return abort();
    o.signal?.addEventListener("abort", abort, { once: true });
    req.end();
  });
}

interface UserModel {
  name?: string;
  servers?: Record<string, { ready?: boolean; pending?: string | null }>;
  pending?: string | null;
}

/**
 * What the hub says of the user's server, asked with the same token: ready, starting, stopping,
 * not running, or the token refused. Undefined when the hub does not answer as a hub does.
 */
export async function hubServerState(
  address: HubAddress,
  o: HubRequest,
): Promise<HubServerState | undefined> {
  const shown = address.hub.href.replace(/\/$/, "");
  const base = { hub: shown, user: address.user, server: address.server };
  const answer = await get(new URL("api/user", address.hub), o);
  if (!answer) return undefined;
  if (answer.status === 401 || answer.status === 403) return { ...base, state: "token-refused" };
  if (answer.status !== 200) return undefined;
  const model = answer.json as UserModel | undefined;
  if (!model || typeof model !== "object") return undefined;
  // A token of another user (an admin's, a service's) may reach this server too; its own model then
  // says nothing of it: ask for the user's.
  let user: UserModel | undefined = model;
  if (model.name !== address.user) {
    const other = await get(new URL(`api/users/${encodeURIComponent(address.user)}`, address.hub), o);
    user = other?.status === 200 ? (other.json as UserModel) : undefined;
  }
  const servers = user?.servers;
  if (!servers) return { ...base, state: "unknown" };
  const server = servers[address.server];
  if (!server) return { ...base, state: "not-running" };
  if (server.pending === "spawn") return { ...base, state: "starting" };
  if (server.pending === "stop") return { ...base, state: "stopping" };
  return { ...base, state: server.ready ? "ready" : "starting" };
}

/**
 * Waits for a starting server through the hub's progress stream (`…/server/progress`, Server-Sent
 * Events ending in `"ready": true` or `"failed": true`). True when it became ready within the time
 * given; false when it failed, the stream broke, or the time ran out.
 */
export async function waitForHubServer(address: HubAddress, o: HubRequest): Promise<boolean> {
  const user = encodeURIComponent(address.user);
  const path = address.server
    ? `api/users/${user}/servers/${encodeURIComponent(address.server)}/progress`
    : `api/users/${user}/server/progress`;
  let buffer = "";
  let ready = false;
  const answer = await get(
    new URL(path, address.hub),
    { ...o, headers: { ...o.headers, Accept: "text/event-stream" } },
    (chunk) => {
      buffer += chunk;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          try {
            const data = JSON.parse(line.slice(5)) as { ready?: boolean; failed?: boolean };
            if (data.ready) ready = true;
            if (data.ready || data.failed) return true;
          } catch {
            // not JSON: a keep-alive or a line the hub may add; the stream goes on
          }
        }
        end = buffer.indexOf("\n\n");
      }
      return false;
    },
  );
  return answer !== undefined && ready;
}
