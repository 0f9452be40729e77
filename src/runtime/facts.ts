/**
 * What a runtime made from these options would be, read from the options and settings alone (no
 * runtime, no kernel, no artifact store): whether kernels come from a gateway and how many are kept
 * for how long. Tool descriptions state these, so a host can list its tools before it has a runtime
 * (the pi extension registers them at load).
 */
import { planKernelChoice } from "./kernel-choice.js";
import { kernelsOnGateway } from "./kernel-provider.js";
import type { RuntimeOptions } from "./runtime.js";
import { keptLimits } from "./sessions.js";

export interface RuntimeFacts {
  usesGateway: boolean;
  limits: { idleTimeoutMs: number; maxSessions: number };
}

/** The same values createRuntime(options) would have (its usesGateway and sessions' limits). */
export function runtimeFacts(options: RuntimeOptions): RuntimeFacts {
  const choice = planKernelChoice({
    gateway: options.gateway,
    python: options.python,
    kernelName: options.kernelName,
    sessionName: options.sessionName,
    settings: options.settings,
  });
  return { usesGateway: kernelsOnGateway(choice, options.backend), limits: keptLimits(options) };
}
