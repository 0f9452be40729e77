#!/usr/bin/env node
// Bundles the CLI into one file, dist/cli/nbagent.js (the installed `nbagent` command): node then
// reads one module instead of ~300 (@sinclair/typebox alone is 266 files, ~120 ms to load on this
// machine), so every short `nbagent call` starts faster. Native and lazily loaded packages stay
// outside (resolved from node_modules as usual); the .py assets are found by src/assets.ts.
import { build } from "esbuild";

await build({
  entryPoints: ["src/cli/main.ts"],
  outfile: "dist/cli/nbagent.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["zeromq", "sharp", "turndown", "turndown-plugin-gfm", "ws"],
  // Bundled CommonJS code may call require(); give it node's, relative to the bundle.
  banner: {
    js: 'import { createRequire as __nbagentRequire } from "node:module";\nconst require = __nbagentRequire(import.meta.url);',
  },
  sourcemap: true,
  logLevel: "warning",
});
