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
export { initScript, STREAM_FLUSH_CHARS, streamGuardScript } from "./init.js";
export { PRELUDE_PATH, type PreludeHelper, preludeHelpers, preludeSource } from "./prelude.js";
export { FifoLock } from "./queue.js";
export { createRuntime, isFdExhaustion, type Runtime, type RuntimeOptions } from "./runtime.js";
export {
  KernelSession,
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
