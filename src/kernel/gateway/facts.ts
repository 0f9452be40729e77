/**
 * What the gateway backend does for its kernels (BackendFacts): they run where the server runs them,
 * with its interpreter and limits, and outlive this process there. No import beyond the types, so the
 * runtime can know these without loading the gateway code (runtime/gateway-deps.ts).
 */
import type { BackendFacts } from "../types.js";

export const GATEWAY_FACTS: BackendFacts = {
  sandbox: false,
  limits: false,
  confinement: false,
  interpreter: false,
  hostEnvironment: false,
  memory: false,
  namedSessions: true,
  remote: true,
};
