/**
 * The init script run inside every kernel before user code, after each start or restart (S23):
 * chdir to the session's cwd, copy the session env into os.environ, put cwd first on sys.path when
 * missing, and load the prelude helpers into the user namespace. Values travel as JSON string
 * literals (valid Python literals), and the prelude as source text, so this also works for a kernel
 * on another machine.
 */
import { PRELUDE_PATH, preludeSource } from "./prelude.js";

export function initScript(cwd: string, env: Record<string, string>, prelude = preludeSource()): string {
  const lit = (s: string) => JSON.stringify(s);
  return [
    "def __nbagent_init():",
    "    import json, os, sys",
    `    cwd = ${lit(cwd)}`,
    "    os.chdir(cwd)",
    `    os.environ.update(json.loads(${lit(JSON.stringify(env))}))`,
    "    if cwd not in sys.path:",
    "        sys.path.insert(0, cwd)",
    `    exec(compile(${lit(prelude)}, ${lit(PRELUDE_PATH)}, "exec"), globals())`,
    "__nbagent_init()",
    "del __nbagent_init",
    "",
  ].join("\n");
}
