/**
 * Where bubblewrap is, for the opt-in sandbox (docs/isolation.md): on its own so that resolving the
 * settings, which every command does, loads no process code (sandbox.ts runs it).
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/**
 * The bubblewrap executable: NBAGENT_BWRAP of `env`, else on its PATH (default /usr/bin:/bin), else
 * undefined. The edges look once (runtime/settings.ts) and pass the answer down.
 */
export function findBwrap(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const explicit = env.NBAGENT_BWRAP?.trim();
  const candidates = explicit
    ? [explicit]
    : (env.PATH ?? "/usr/bin:/bin").split(delimiter).map((d) => join(d, "bwrap"));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  return undefined;
}

export const NO_BWRAP =
  "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap (Debian/Ubuntu), or your distribution's bubblewrap package";
