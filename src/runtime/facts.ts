/**
 * What a runtime made from these options would be, read from the options and settings alone (no
 * runtime, no kernel, no artifact store): what its backend does for its kernels (named sessions kept
 * on a server) and how many kernels are kept for how long. Tool descriptions state these, so a host
 * can list its tools before it has a runtime (the pi extension registers them at load).
 */
import { planKernelChoice } from "./kernel-choice.js";
import { factsFor } from "./kernel-provider.js";
import type { RuntimeOptions } from "./runtime.js";
import { keptLimits } from "./sessions.js";

export interface RuntimeFacts {
  /** A session can be kept by name on the server, after this process ends (BackendFacts.namedSessions). */
  namedSessions: boolean;
  /** Kernels are given this machine's environment (BackendFacts.hostEnvironment). */
  hostEnvironment: boolean;
  limits: { idleTimeoutMs: number; maxSessions: number };
}

/** The same values createRuntime(options) would have (its backend's facts and sessions' limits). */
export function runtimeFacts(options: RuntimeOptions): RuntimeFacts {
  const choice = planKernelChoice({
    gateway: options.gateway,
    python: options.python,
    kernelName: options.kernelName,
    sessionName: options.sessionName,
    settings: options.settings,
  });
  const facts = factsFor(choice, options.backend);
  return {
    namedSessions: facts.namedSessions,
    hostEnvironment: facts.hostEnvironment,
    limits: keptLimits(options),
  };
}
