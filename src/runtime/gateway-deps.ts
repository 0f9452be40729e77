/**
 * The gateway pieces the runtime uses (GatewayBackend, the shared local gateway), in one place.
 * Placeholder until the gateway backend lands: every entry fails with a clear Error:.
 */
import type { KernelBackend } from "../kernel/types.js";
import type { GatewayConnection } from "./kernel-choice.js";
import type { NamedSessionGateway } from "./named-sessions.js";

export type GatewayKernelBackend = KernelBackend & NamedSessionGateway;

export interface LocalGatewayInfo {
  url: string;
  token: string;
  pid: number;
  python: string;
  logFile: string;
  startedAt: string;
  serverVersion?: string;
}

const MISSING = "Error: this build of nbagent has no gateway backend";

export function createGatewayBackend(_connection: GatewayConnection): GatewayKernelBackend {
  throw new Error(MISSING);
}

export async function ensureLocalGateway(_o: {
  python?: string;
  stateRoot?: string;
  env?: Record<string, string>;
}): Promise<LocalGatewayInfo> {
  throw new Error(MISSING);
}

export async function stopLocalGateway(_o: { python?: string; stateRoot?: string }): Promise<boolean> {
  return false;
}
