/**
 * The package as npm makes it, for the install tests (test/package, test/pi, test/mcp): `npm pack` of
 * this checkout, with the files it must hold checked.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);
const ROOT = resolve(new URL("..", import.meta.url).pathname);

/** npm without its audit, funding and update notices. */
export const NPM_ENV = {
  ...process.env,
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false",
};

/** Packs the checkout into `dir`: the tarball's path and the files it holds (each of `needed` among them). */
export async function packInto(dir: string, needed: string[]): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: ROOT,
    env: NPM_ENV,
    maxBuffer: 1 << 24,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  const files = packed.files.map((f) => f.path);
  for (const file of needed)
    assert.ok(files.includes(file), `${file} missing from the package (npm run build makes it)`);
  return { tarball: join(dir, packed.filename), files };
}
