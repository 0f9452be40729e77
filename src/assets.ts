/**
 * Where the package's non-TypeScript files (the kernel prelude, the fork server) are, whether the
 * code runs from src/ (through tsx), from dist/ as compiled, or bundled into one file
 * (dist/cli/nbagent.js, the installed command): paths are given relative to src/, which dist/
 * mirrors, and resolved from the package root.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * The nearest folder at or above this file's that holds a package's package.json (one with a name:
 * the package's root). dist/cli holds one with only `"type": "commonjs"` (scripts/bundle.mjs): a
 * folder's module type, not a package.
 */
export function packageRoot(): string | undefined {
  let root = HERE;
  while (!namesAPackage(join(root, "package.json"))) {
    const up = dirname(root);
    if (up === root) return undefined;
    root = up;
  }
  return root;
}

function namesAPackage(file: string): boolean {
  if (!existsSync(file)) return false;
  try {
    return typeof (JSON.parse(readFileSync(file, "utf8")) as { name?: unknown }).name === "string";
  } catch {
    return false;
  }
}

function findBase(): string {
  const root = packageRoot();
  if (root === undefined) return HERE; // no package around: assets sit next to this file
  const src = join(root, "src");
  return HERE === src || HERE.startsWith(src + sep) ? src : join(root, "dist");
}

let base: string | undefined;

/** The absolute path of an asset given relative to src/ (e.g. "runtime/prelude.py"). */
export function assetPath(relative: string): string {
  base ??= findBase();
  return join(base, relative);
}
