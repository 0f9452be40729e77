export {
  BACKENDS,
  type BackendKind,
  type BuildContext,
  backendOf,
  buildKernelBackend,
  type KernelsPlace,
  LIMITS_ON_GATEWAY,
} from "./backends.js";
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
export { type SlotHolder, SlotWaitTimeoutError } from "./errors.js";
export {
  type CallResultSummary,
  type CellOutput,
  EventBus,
  type RuntimeEvent,
  type SessionChange,
  type StampedEvent,
  type SubscribeOptions,
  Subscription,
} from "./events.js";
export { type RuntimeFacts, runtimeFacts } from "./facts.js";
export { initScript, STREAM_FLUSH_CHARS, streamGuardScript } from "./init.js";
export {
  type BuiltBackend,
  checkGatewayUrl,
  type GatewayConnection,
  type GatewaySetting,
  type KernelChoice,
  type KernelChoiceInput,
  planKernelChoice,
  type SharedGateway,
} from "./kernel-choice.js";
export {
  createKernelProvider,
  type KernelProvider,
  type KernelProviderOptions,
  type KernelRequest,
  SANDBOX_ON_GATEWAY,
  SANDBOX_ON_SHARED_GATEWAY,
} from "./kernel-provider.js";
export {
  type NamedSessionInfo,
  type NamedSessionRecord,
  NamedSessions,
  registryPath,
} from "./named-sessions.js";
export { PRELUDE_PATH, type PreludeHelper, preludeHelpers, preludeSource } from "./prelude.js";
export { FifoLock, type QueueHolder, QueueWaitTimeoutError } from "./queue.js";
export {
  type ActionOrigin,
  createRuntime,
  isFdExhaustion,
  isGatewayUnreachable,
  type KernelInterrupt,
  type KernelListing,
  type KernelRestart,
  type NamedSessionsView,
  type Runtime,
  type RuntimeOptions,
} from "./runtime.js";
export {
  KernelSession,
  keyText,
  type NamedSessionStart,
  namedKey,
  notebookKey,
  type SessionExecuteResult,
  type SessionKey,
  type SessionSpec,
  type StateLoss,
  sessionKey,
  TOO_MANY_RESTARTS,
  TooManyRestartsError,
} from "./session.js";
export {
  CellRecording,
  type KernelRecordEvent,
  MAX_CELL_OUTPUT_BYTES,
  MAX_RECORD_BYTES,
  namedRecordPath,
  type RecordEntry,
  type RecordedCell,
  type RecordedKernel,
  SessionRecord,
  SessionRecords,
} from "./session-record.js";
export {
  type KeptSessionState,
  KernelSessions,
  type KernelSessionsOptions,
  type RetiredSession,
  type SessionCallOptions,
  type SessionLease,
  type SessionMode,
} from "./sessions.js";
export {
  artifactMaxAgeFromEnv,
  DEFAULT_WAIT_SECONDS,
  type HostEnv,
  resolveSettings,
  type SandboxMode,
  type Settings,
  SettingsError,
  type SettingsFlags,
  waitSecondsFromEnv,
} from "./settings.js";
