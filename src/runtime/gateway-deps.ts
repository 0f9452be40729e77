/**
 * The gateway pieces the runtime uses (the gateway backend, the shared local gateway), in one place.
 */
import { GatewayBackend } from "../kernel/gateway/index.js";
import type { NamedSessionGateway } from "./named-sessions.js";
import type { GatewayConnection } from "./settings.js";

export {
  DEFAULT_IDLE_CULL_SECONDS,
  ensureLocalGateway,
  type LocalGatewayInfo,
  stopLocalGateway,
} from "../kernel/gateway/local-server.js";

export type GatewayKernelBackend = GatewayBackend & NamedSessionGateway;

export function createGatewayBackend(connection: GatewayConnection): GatewayKernelBackend {
  return new GatewayBackend({
    url: connection.url,
    token: connection.token,
    headers: connection.headers,
    ca: connection.ca,
  });
}
