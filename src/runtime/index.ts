export { CallAbortedError, CallTimeoutError, Deadline, raceDeadline } from "./deadline.js";
export {
  ALLOW_ENV_VARIABLE,
  buildKernelEnv,
  filterSecrets,
  isSecretName,
  type KernelEnv,
  kernelEnv,
  SECRET_NAME_PATTERNS,
  secretMatcher,
  sessionEnv,
  splitSecrets,
  valueCarriesSecret,
} from "./env.js";
export { SettingsError } from "./errors.js";
export { initScript, STREAM_FLUSH_CHARS, streamGuardScript } from "./init.js";
export {
  checkGatewayUrl,
  type GatewayConnection,
  type GatewaySetting,
  type KernelChoice,
  type KernelChoiceInput,
  type KernelPlan,
  planKernelChoice,
  type ResolvedKernelChoice,
  resolveKernelChoice,
} from "./kernel-choice.js";
export {
  createKernelProvider,
  type KernelProvider,
  type KernelProviderOptions,
  type KernelRequest,
  type ProvidedBackend,
  SANDBOX_ON_GATEWAY,
  SANDBOX_ON_SHARED_GATEWAY,
  type SandboxMode,
  sandboxFromEnv,
} from "./kernel-provider.js";
export {
  type NamedSessionInfo,
  type NamedSessionRecord,
  NamedSessions,
  registryPath,
} from "./named-sessions.js";
export { PRELUDE_PATH, type PreludeHelper, preludeHelpers, preludeSource } from "./prelude.js";
export { FifoLock } from "./queue.js";
export {
  createRuntime,
  isFdExhaustion,
  isGatewayUnreachable,
  type NamedSessionsView,
  type Runtime,
  type RuntimeOptions,
} from "./runtime.js";
export {
  KernelSession,
  type NamedSessionStart,
  type SessionExecuteResult,
  type SessionSpec,
  sessionKey,
  TOO_MANY_RESTARTS,
  TooManyRestartsError,
} from "./session.js";
export {
  KernelSessions,
  type KernelSessionsOptions,
  type SessionCallOptions,
  type SessionLease,
  type SessionMode,
  type SlotHolder,
  SlotWaitTimeoutError,
} from "./sessions.js";
