/**
 * The gateway pieces the runtime uses (the gateway backend, the shared local gateway), in one place,
 * loaded only when a gateway is used: the gateway code and its WebSocket library (`ws`) cost every
 * other command a large part of its start-up (docs/backends.md, "Gateway backend"). Only types are
 * imported statically here.
 */
import type { GatewayBackend } from "../kernel/gateway/index.js";
import type {
  EnsureLocalGatewayOptions,
  LocalGatewayInfo,
  LocalGatewayOptions,
} from "../kernel/gateway/local-server.js";
import type { NamedSessionGateway } from "./named-sessions.js";
import type { GatewayConnection } from "./settings.js";

export type { LocalGatewayInfo } from "../kernel/gateway/local-server.js";

export type GatewayKernelBackend = GatewayBackend & NamedSessionGateway;

export async function createGatewayBackend(
  connection: GatewayConnection,
  launchTimeoutMs?: number,
): Promise<GatewayKernelBackend> {
  const { GatewayBackend } = await import("../kernel/gateway/backend.js");
  return new GatewayBackend({
    url: connection.url,
    ...(launchTimeoutMs !== undefined ? { launchTimeoutMs } : {}),
    token: connection.token,
    headers: connection.headers,
    ca: connection.ca,
    ...(connection.reconnectSeconds !== undefined
      ? { reconnectGiveUpMs: connection.reconnectSeconds * 1000 }
      : {}),
  });
}

/**
 * The shared local gateway, found or started; `idleCullSeconds` defaults to the server's own cull
 * (DEFAULT_IDLE_CULL_SECONDS: kernels nobody swept, their process died, do not stay forever).
 */
export async function ensureLocalGateway(options: EnsureLocalGatewayOptions): Promise<LocalGatewayInfo> {
  const server = await import("../kernel/gateway/local-server.js");
  return server.ensureLocalGateway({ idleCullSeconds: server.DEFAULT_IDLE_CULL_SECONDS, ...options });
}

export async function stopLocalGateway(options: LocalGatewayOptions): Promise<boolean> {
  return (await import("../kernel/gateway/local-server.js")).stopLocalGateway(options);
}
