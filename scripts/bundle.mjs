#!/usr/bin/env node
// Bundles the CLI into one file, dist/cli/nbagent.js (the installed `nbagent` command), plus chunks
// next to it (dist/cli/nbagent-*.js) holding code only some commands load: node then
// reads a few modules instead of ~300 (@sinclair/typebox alone is 266 files, ~120 ms to load on this
// machine), so every short `nbagent call` starts faster. Native and lazily loaded packages stay
// outside (resolved from node_modules as usual); the .py assets are found by src/assets.ts.
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname } from "node:path";
import { build } from "esbuild";

// `node scripts/bundle.mjs pi` builds only the pi extension (its tests do, leaving the CLI's alone).
// `node scripts/bundle.mjs cli DIR` builds only the CLI, into DIR (a test's own copy, under dist/ so it
// finds the assets there, which no other build replaces while that test runs).
// `node scripts/bundle.mjs view` builds only the view page (docs/view.md), into dist/view/page.
const only = process.argv[2];
const cliDir = only === "cli" && process.argv[3] ? process.argv[3] : "dist/cli";

/** Writes each output through a temporary file and a rename: tests build while others load it. */
function writeAtomically(files) {
  for (const file of files) {
    mkdirSync(dirname(file.path), { recursive: true });
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    renameSync(tmp, file.path);
  }
}

// Bundled CommonJS code (pngjs, which the views use to draw images) calls require() for node's own
// modules (util, zlib, stream, …), which an ES module has no binding for: esbuild's stand-in throws
// `Dynamic require of "util" is not supported`. Each bundle gets node's require, made for the
// bundle's own file by createRequire, so such a call loads what node would load there. (Leaving
// each such package outside the bundle would work too, but only for the packages listed: the next
// CommonJS dependency would break the entry again; test/package/ imports every entry to check.)
const REQUIRE_BANNER =
  'import { createRequire as __nbagentRequire } from "node:module";\nconst require = __nbagentRequire(import.meta.url);';

// The `nbagent view` page: browser code, CSS and KaTeX's fonts, everything the page loads, so it
// works offline (no CDN). page.js is the page, frame.js the script of frame.html where HTML and
// JavaScript outputs run sandboxed. KaTeX's CSS lists woff2, woff and ttf fonts: only the woff2 ones
// are shipped (every browser the page targets takes them first), the others stay unresolved URLs.
if (only === undefined || only === "view") {
  const outdir = "dist/view/page";
  const page = await build({
    entryPoints: {
      page: "src/view/page/main.ts",
      frame: "src/view/page/frame-inner.ts",
      "page-style": "src/view/page/page.css",
    },
    outdir,
    bundle: true,
    platform: "browser",
    format: "iife",
    target: ["chrome100", "firefox100", "safari15"],
    loader: { ".woff2": "file" },
    external: ["*.woff", "*.ttf"],
    assetNames: "fonts/[name]",
    // no source maps: they would triple what the package ships for the page (~2 MB)
    minify: true,
    legalComments: "linked",
    logLevel: "warning",
    write: false,
  });
  writeAtomically(
    page.outputFiles.map((f) => ({
      path: f.path.replace(/page-style\.css$/, "page.css"),
      contents: f.contents,
    })),
  );
  for (const file of ["index.html", "frame.html", "frame.css"])
    copyFileSync(`src/view/page/${file}`, `${outdir}/${file}`);
  if (only === "view") process.exit(0);
}

if (only !== "pi") {
  const cli = await build({
    entryPoints: { nbagent: "src/cli/main.ts" },
    outdir: cliDir,
    // Code only some commands load (the MCP server and its SDK, ~850 KB; the gateway backend and
    // `ws`, imported only when a gateway is used; the renderers, only on a terminal) goes to chunks
    // that commands import when they need them, so every other command starts as fast as before
    // (test/run/cli-bundle.stress.test.ts checks what `--version` and `notebook read` load).
    splitting: true,
    chunkNames: "nbagent-[name]-[hash]",
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // sixel is sloppy-mode CommonJS (assigns an undeclared global): bundled into ESM it throws.
    external: ["zeromq", "sharp", "turndown", "ws", "sixel"],
    banner: { js: REQUIRE_BANNER },
    // `nbagent --version` prints this and loads nothing else (src/cli/main.ts); run from source, it
    // reads package.json.
    define: { __NBAGENT_VERSION__: JSON.stringify(JSON.parse(readFileSync("package.json", "utf8")).version) },
    // Minified: node 20 parses every byte of a module before it runs it, and a small `notebook read`
    // spends more time there than in the read (~5 ms of ~130 on this machine, npm run bench cli-cold).
    // The source maps next to the chunks give the TypeScript names back (node --enable-source-maps).
    minify: true,
    sourcemap: true,
    logLevel: "warning",
    write: false,
  });
  writeAtomically(cli.outputFiles);
  // Chunk names carry a content hash: remove the earlier builds' chunks (not this one's, which a
  // running nbagent may be loading) so the package holds only this build.
  const kept = new Set(cli.outputFiles.map((f) => basename(f.path)));
  for (const name of readdirSync(cliDir, { withFileTypes: true })) {
    if (name.isFile() && /^nbagent-.+\.js(\.map)?$/.test(name.name) && !kept.has(name.name))
      rmSync(`${cliDir}/${name.name}`);
  }
}

// The pi extension (`nbagent/pi`, docs/pi.md) as one file, dist/pi/index.js. pi loads extensions
// through jiti, which maps `@sinclair/typebox` to its own TypeBox 1.x: bundled, our code keeps the
// TypeBox it was written for, and pi's packages are only ever imported as types. `sixel` stays
// outside: its bundled copy of UPNG assigns an undeclared global, an error in the bundle's strict ESM.
// Written through a temporary file and a rename: tests build it while others load it.
if (only === "cli") process.exit(0);
const pi = await build({
  entryPoints: { index: "src/pi/index.ts" },
  outdir: "dist/pi",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["zeromq", "sharp", "turndown", "ws", "sixel"],
  banner: { js: REQUIRE_BANNER },
  sourcemap: true,
  logLevel: "warning",
  write: false,
});
writeAtomically(pi.outputFiles);
