/**
 * How tests start the nbagent CLI as a process. The test runner (scripts/test.mjs) builds
 * dist/cli/nbagent.js when src/ is newer and a file it runs reaches this module (the way it tells a
 * file that needs dist/: scripts/dist-users.mjs), and hands its path over in NBAGENT_TEST_CLI: a bundled
 * start takes ~1 s here, against 2–3 s through tsx. Without the runner (a test file run on its own)
 * the CLI runs from source through tsx.
 */
import { join, resolve } from "node:path";

export const ROOT = resolve(new URL("..", import.meta.url).pathname);
export const CLI_SOURCE = join(ROOT, "src/cli/main.ts");
const TSX = import.meta.resolve("tsx");

/** node's arguments before the CLI's own: the fresh bundle, or tsx and the source entry. */
export function cliEntry(): string[] {
  const bundle = process.env.NBAGENT_TEST_CLI;
  return bundle ? [bundle] : ["--import", TSX, CLI_SOURCE];
}

/** The whole command line prefix: node, then cliEntry(). */
export function cliCommand(): string[] {
  return [process.execPath, ...cliEntry()];
}
