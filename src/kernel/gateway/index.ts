/** The gateway backend's public surface (docs/backends.md). */

export { GatewayBackend, type GatewayBackendOptions } from "./backend.js";
export {
  type GatewayKernel,
  GatewayLaunchedKernel,
  GatewayProvisioner,
  KernelGoneError,
} from "./provisioner.js";
export {
  GatewayHttpError,
  type GatewayOptions,
  GatewayRest,
  GatewayUnreachableError,
  type RestResponse,
} from "./rest.js";
export { decodeMessage, encodeMessage, V1_PROTOCOL, type WsProtocol } from "./ws-codec.js";
export { GatewayWsTransport, type WsTransportOptions } from "./ws-transport.js";
