/**
 * The toolbox of one pi session (docs/pi.md): made on the session's first tool call, when pi's
 * working directory and session file are known, and shut down — every kernel with it — when pi ends
 * the session. A call that arrives after the end gets no new kernels.
 */

import { resolveSettings, type Settings } from "../runtime/settings.js";
import { createToolbox, type Toolbox, type ToolboxOptions } from "../tools/index.js";
import { withViewSocket } from "../view/host.js";

export type SessionToolboxOptions = Omit<ToolboxOptions, "cwd" | "settings"> & {
  /** Default: resolved from pi's process environment when the toolbox is made (runtime/settings.ts). */
  settings?: Settings;
};

/** What a tool call tells us about the pi session it runs in. */
export interface PiSessionInfo {
  cwd: string;
  /** pi's session file (undefined for an in-memory session): kernels see it as PI_SESSION_FILE. */
  sessionFile?: string;
}

export class SessionEndedError extends Error {
  constructor() {
    super("the pi session has ended; its kernels are shut down");
  }
}

export class SessionToolbox {
  #toolbox: Toolbox | undefined;
  #ended = false;

  constructor(
    private readonly options: SessionToolboxOptions = {},
    private readonly create: (options: ToolboxOptions) => Toolbox = createToolbox,
  ) {}

  /** The session's toolbox, made on first use. */
  get(session: PiSessionInfo): Toolbox {
    if (this.#ended) throw new SessionEndedError();
    this.#toolbox ??= withViewSocket(
      this.create({
        ...this.options,
        settings: this.options.settings ?? resolveSettings({}, process.env),
        cwd: session.cwd,
        runtime: {
          ...(session.sessionFile ? { sessionFile: session.sessionFile } : {}),
          ...this.options.runtime,
        },
      }),
      "pi",
      session.cwd,
    );
    return this.#toolbox;
  }

  get started(): boolean {
    return this.#toolbox !== undefined;
  }

  /** Ends the session: calls still running are cancelled by the runtime, every kernel shuts down. */
  async end(): Promise<void> {
    this.#ended = true;
    const toolbox = this.#toolbox;
    this.#toolbox = undefined;
    await toolbox?.dispose();
  }
}
