/**
 * The runtime's typed errors that callers outside it test for (tools/failure-text.ts words them):
 * kept in this small file so wording a failure does not load the session machinery.
 */
import type { DeathCause } from "../kernel/errors.js";
import { CallTimeoutError } from "./deadline.js";

/**
 * Settings that cannot be used, as a typed value: which setting (an option, a variable, or
 * "conflict" for two that cannot be honoured together) and what is wrong with it. `message` says it
 * without the Error: prefix; tools/ (errorResult, errorText) words it for the model and the CLI.
 */
export class SettingsError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = "SettingsError";
  }
}

/** A kept session that held a slot while a call waited for one. */
export type SlotHolder =
  | { kind: "python"; session: string; cwd: string }
  | { kind: "notebook"; path: string };

/** The deadline passed while the call waited for a free session slot (all maxSessions busy). */
export class SlotWaitTimeoutError extends CallTimeoutError {
  constructor(
    seconds: number,
    readonly maxSessions: number,
    /** The busy sessions holding the slots when the wait ended. */
    readonly holders: SlotHolder[],
  ) {
    super(seconds);
    this.message = `${this.message}, waiting for a kernel slot (maxSessions=${maxSessions})`;
    this.name = "SlotWaitTimeoutError";
  }
}

/** How a kept session's kernel died while no call used it: when, and why (the kernel layer's words and typed cause). */
export interface UnusedDeath {
  at: number;
  reason: string;
  cause?: DeathCause;
}

/**
 * A kept session's kernel whose connection was lost (`lost`: when and why; its gateway stayed
 * unreachable) could not be reached again now (`error`). Nothing ran and nothing was started: the
 * kernel may still run on its server with its state, and the next call tries again.
 */
export class KernelUnreachableError extends Error {
  constructor(
    readonly lost: UnusedDeath,
    readonly error: unknown,
  ) {
    super(
      `the kernel's connection was lost and could not be made again: ${(error as Error)?.message ?? String(error)}`,
    );
    this.name = "KernelUnreachableError";
  }
}

/**
 * A kept session's kernel had died since the last call (`death`, when it was seen), its state with
 * it, and a new kernel could not be started (`startError`: the start's own failure).
 */
export class DeadKernelNotRestartedError extends Error {
  constructor(
    readonly death: UnusedDeath | undefined,
    readonly startError: unknown,
  ) {
    super(
      `the kernel had died and could not be restarted: ${(startError as Error)?.message ?? String(startError)}`,
    );
    this.name = "DeadKernelNotRestartedError";
  }
}
