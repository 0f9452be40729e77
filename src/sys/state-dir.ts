/**
 * The per-user state directory: artifacts, kernel connection files, the shared local gateway, the
 * named-session registry and the interpreter cache live below it (docs/artifacts.md).
 */
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/** The variables the state directory depends on. */
export interface StateDirEnv {
  NBAGENT_STATE_DIR?: string;
  USER?: string;
}

/**
 * NBAGENT_STATE_DIR when set (not blank), else `<tmp>/nbagent-<uid>`. The environment and the
 * temp folder are parameters so that a caller holding its own settings passes them in.
 */
export function stateDir(env: StateDirEnv, tmp: string = tmpdir()): string {
  const configured = env.NBAGENT_STATE_DIR?.trim();
  if (configured) return configured;
  let uid: string;
  try {
    uid = String(userInfo().uid);
  } catch {
    uid = env.USER ?? "user";
  }
  return join(tmp, `nbagent-${uid}`);
}
