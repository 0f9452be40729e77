import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../assets.js";

/** The package's version, from its package.json (found upwards: the bundle's chunks sit at any depth). */
export function version(): string {
  const root = packageRoot();
  if (root === undefined) return "unknown";
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  return pkg.version;
}
