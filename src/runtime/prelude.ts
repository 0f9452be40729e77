/**
 * The prelude (prelude.py next to this file, copied to dist/runtime/ by scripts/copy-assets.mjs):
 * its source, sent into each kernel by the init script, and the one-line docs of its public helpers,
 * read from the file itself for the python tool's description.
 */
import { readFileSync } from "node:fs";
import { assetPath } from "../assets.js";

export const PRELUDE_PATH = assetPath("runtime/prelude.py");

let source: string | undefined;

export function preludeSource(): string {
  source ??= readFileSync(PRELUDE_PATH, "utf8");
  return source;
}

export interface PreludeHelper {
  name: string;
  /** First line of the docstring. */
  doc: string;
}

/** Public top-level functions of the prelude with the first line of their docstrings. */
export function preludeHelpers(text: string = preludeSource()): PreludeHelper[] {
  const out: PreludeHelper[] = [];
  const re = /^def ([A-Za-z]\w*)\([\s\S]*?\):\s*\n[ \t]+(?:"""|''')([^\n]*?)(?:"""|'''|\n)/gm;
  for (const m of text.matchAll(re)) out.push({ name: m[1], doc: m[2].trim() });
  return out;
}
