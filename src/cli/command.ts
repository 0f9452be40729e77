/** What every `nbagent <command>` module exports, and how the registry (commands.ts) loads it. */
import type { Settings } from "../runtime/settings.js";

export interface Command {
  /** The whole `nbagent <command> --help` text: what it does, usage, options, exit codes, an example. */
  help: string;
  /** `settings`: the flags taken out by main.ts and the environment, resolved once (runtime/settings.ts). */
  run(args: string[], settings: Settings): Promise<number>;
}

export interface CommandEntry {
  /** One line for `nbagent --help`. */
  summary: string;
  load(): Promise<Command>;
}
