/** What the local backend does for its kernels (BackendFacts): they are this machine's processes. */
import type { BackendFacts } from "../types.js";

export const LOCAL_FACTS: BackendFacts = {
  sandbox: true,
  limits: true,
  confinement: true,
  interpreter: true,
  hostEnvironment: true,
  memory: true,
  namedSessions: false,
  remote: false,
};
