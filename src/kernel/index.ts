/** The kernel layer's public surface: the Kernel contract, the local backend, and shared pieces. */

export { KernelClient, type RequestOptions, StartStalledError, type WaitReadyOptions } from "./client.js";
export { ConnectedKernel } from "./connected-kernel.js";
export { convertDisplay, htmlToMarkdown, LEGACY_STATUS_MIME, STATUS_MIME } from "./display.js";
export {
  type DeathCause,
  type FailureReport,
  failureReport,
  type GatewayFailure,
  isGatewayFailure,
  type KernelDeath,
  type KernelFailure,
  KernelFailureError,
  KernelStartError,
  type KernelStartFailure,
} from "./errors.js";
export { AheadRequest, type ExecutionHost, runExecution } from "./execution.js";
export {
  FutureDisposedError,
  type FutureHooks,
  type FutureOptions,
  type FutureRouter,
  RequestFuture,
} from "./future.js";
export {
  GatewayBackend,
  type GatewayBackendOptions,
  GatewayHttpError,
  type GatewayKernel,
  type GatewayOptions,
  GatewayUnreachableError,
  KernelGoneError,
} from "./gateway/index.js";
export { findInterpreter } from "./interpreter.js";
export { createLocalBackend, LocalBackend, type LocalBackendOptions } from "./local/backend.js";
export { findBwrap, NO_BWRAP } from "./local/bwrap.js";
export { type KernelSpec, listKernelSpecNames, resolveKernelSpec } from "./local/kernelspec.js";
export { probeIsolation } from "./local/sandbox.js";
export type * from "./messages.js";
export { MessageFactory } from "./messages.js";
export type { KernelProvisioner, LaunchedKernel } from "./provisioner.js";
export { abortable, anySignal, deadlineSignal, type ScopedDeadline, TimeoutError } from "./time-limits.js";
export type { KernelTransport, OutgoingChannel, TransportStats } from "./transport.js";
export * from "./types.js";
export { WireCodec } from "./wire.js";
