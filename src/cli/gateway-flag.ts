/**
 * `--gateway URL` and `--gateway-token-file F` on the commands that start kernels (docs/cli.md):
 * taken out of a command's arguments (before a `--`) into NBAGENT_GATEWAY_URL and
 * NBAGENT_GATEWAY_TOKEN, which the runtime reads — so the flag and the variable are one setting, and
 * every command (and the runtime of `mcp`, `demo`, `notebook`) sees it the same way. The URL (from
 * the flag or the variable) is checked here, before anything starts.
 */
import { readFileSync } from "node:fs";
import { checkGatewayUrl } from "../runtime/kernel-choice.js";

/** The commands whose kernels a gateway can run, and `sessions` (which lists the gateway's). */
export const GATEWAY_COMMANDS = new Set([
  "call",
  "batch",
  "mcp",
  "demo",
  "python",
  "notebook",
  "run",
  "sessions",
]);

/**
 * Returns the remaining arguments, or an error text (usage, exit 2). Sets NBAGENT_GATEWAY_URL from
 * --gateway and NBAGENT_GATEWAY_TOKEN from --gateway-token-file (first line, trimmed).
 */
export function takeGatewayFlags(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { args: string[] } | { error: string } {
  const rest: string[] = [];
  let url: string | undefined;
  let tokenFile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    if (a === "--gateway" || a === "--gateway-token-file") {
      const value = args[i + 1];
      if (value === undefined || value.startsWith("-")) return { error: `${a} needs a value` };
      if (a === "--gateway") url = value;
      else tokenFile = value;
      i++;
    } else if (a.startsWith("--gateway=")) url = a.slice("--gateway=".length);
    else if (a.startsWith("--gateway-token-file=")) tokenFile = a.slice("--gateway-token-file=".length);
    else rest.push(a);
  }
  if ((url !== undefined || tokenFile !== undefined) && !GATEWAY_COMMANDS.has(name)) {
    return { error: `--gateway applies to ${[...GATEWAY_COMMANDS].join(", ")}, not to ${name}` };
  }
  if (tokenFile !== undefined && url === undefined && !env.NBAGENT_GATEWAY_URL?.trim()) {
    return { error: "--gateway-token-file goes with --gateway URL (or NBAGENT_GATEWAY_URL)" };
  }
  try {
    if (url !== undefined) checkGatewayUrl(url, "--gateway");
    else if (env.NBAGENT_GATEWAY_URL?.trim()) checkGatewayUrl(env.NBAGENT_GATEWAY_URL, "NBAGENT_GATEWAY_URL");
  } catch (err) {
    return { error: (err as Error).message };
  }
  let token: string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, "utf8").split("\n", 1)[0].trim();
    } catch (err) {
      return {
        error: `cannot read --gateway-token-file ${tokenFile}: ${(err as NodeJS.ErrnoException).code ?? err}`,
      };
    }
    if (!token) return { error: `--gateway-token-file ${tokenFile} is empty` };
  }
  if (url !== undefined) env.NBAGENT_GATEWAY_URL = url;
  if (token !== undefined) env.NBAGENT_GATEWAY_TOKEN = token;
  return { args: rest };
}
