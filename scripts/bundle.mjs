#!/usr/bin/env node
import { spawnSync } from "node:child_process";
// Bundles the CLI: dist/cli/nbagent.js (the installed `nbagent` command, a small entry) and beside it
// dist/cli/nbagent-cli-<hash>.cjs, every command in one file, run from a V8 code cache
// (nbagent-cli-<hash>.cjs.cache, made here): node then reads two files instead of ~300 modules
// (@sinclair/typebox alone is 266 files, ~120 ms to load on this machine) and compiles almost
// nothing, so every short `nbagent call` starts faster. Native and lazily loaded packages stay
// outside (resolved from node_modules as usual); the .py assets are found by src/assets.ts.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { build } from "esbuild";

// `node scripts/bundle.mjs pi` builds only the pi extension (its tests do, leaving the CLI's alone).
// `node scripts/bundle.mjs cli DIR` builds only the CLI, into DIR (a test's own copy, under dist/ so it
// finds the assets there, which no other build replaces while that test runs).
// `node scripts/bundle.mjs view` builds only the view page (docs/view.md), into dist/view/page.
const only = process.argv[2];
const cliDir = only === "cli" && process.argv[3] ? process.argv[3] : "dist/cli";
/** The CLI's bundle beside its entry, `nbagent-cli-<hash>.cjs` (and its code cache, `….cjs.cache`). */
const CLI_BUNDLE = "nbagent-cli";
/** The MCP SDK's bundle beside it (src/mcp/sdk.ts), with its code cache. */
const SDK_BUNDLE = "nbagent-mcp-sdk";
/** The terminal views' packages' bundle (src/render/vendor.ts). */
const RENDER_BUNDLE = "nbagent-render";
/** The validators of nbformat versions other than 4.5 (src/notebook/schema/older.ts). */
const NBFORMAT_BUNDLE = "nbagent-nbformat";

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
  const version = JSON.stringify(JSON.parse(readFileSync("package.json", "utf8")).version);
  // Everything a command runs (dispatch.ts and all it imports) as one CommonJS file: node 20 keeps no
  // compile cache, and ES modules cannot be given one, but a script can (vm.Script cachedData). With
  // the cache a short `nbagent call notebook` read spends ~25% less time than with ~50 ES module
  // chunks loaded, resolved, compiled and linked one by one (npm run bench cli-cold; README). Modules
  // a command does not import are in the file but never run (esbuild wraps each in a lazy init).
  // Its name carries a hash of its content, and so does its cache's (`<name>.cache`): V8 checks a
  // cache against the source's length, not its bytes, so a cache must never meet another build.
  // Native and lazily loaded packages stay outside (required from node_modules as usual); the .py
  // assets are found by src/assets.ts, from this file's folder.
  // Packages only some commands load, each in a bundle of its own beside the main one: V8 restores
  // every function of a script from its code cache, called or not, so each command paid for them
  // (~3 ms for the MCP SDK with zod, ajv and hono — ~1,900 of the ~5,800 functions the single bundle
  // had; ~1 ms for the terminal views' packages; the validators of nbformat versions other than 4.5,
  // ~450 KB to read). In the main bundle each side module is a stub that
  // loads its bundle through its own code cache (src/cli/code-cache.ts): the MCP SDK's made by the
  // warm-up below, the others' written by the first command that loads them.
  /** What every bundle run from a code cache is built with. */
  const codeCached = {
    entryNames: "[name]-[hash]",
    outExtension: { ".js": ".cjs" },
    outdir: cliDir,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    // import.meta.url (assets.ts, createRequire calls) is the file's URL, as it was in the ES modules.
    banner: { js: 'var __nbagentImportMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
    // Minified: less to read. The source map beside it gives the TypeScript names back
    // (node --enable-source-maps).
    minify: true,
    sourcemap: true,
    logLevel: "warning",
    write: false,
  };
  const sides = [];
  for (const [name, source] of [
    [SDK_BUNDLE, "src/mcp/sdk.ts"],
    [RENDER_BUNDLE, "src/render/vendor.ts"],
    [NBFORMAT_BUNDLE, "src/notebook/schema/older.ts"],
  ]) {
    const side = await build({
      ...codeCached,
      entryPoints: { [name]: source },
      define: { "import.meta.url": "__nbagentImportMetaUrl" },
    });
    const file = side.outputFiles.find((f) => f.path.endsWith(".cjs"));
    checkCodeCacheable(file);
    sides.push({ source: resolve(source), name: basename(file.path), outputFiles: side.outputFiles });
  }
  const sideStubs = {
    name: "side-bundles",
    setup(b) {
      // An import of a side module (src/mcp/sdk.ts, src/render/vendor.ts,
      // src/notebook/schema/older.ts) is the stub below.
      b.onResolve({ filter: /^\.\/(sdk|vendor|schema\/older)\.js$/ }, (args) => {
        const side = sides.find((x) => x.source === join(args.resolveDir, args.path.replace(/\.js$/, ".ts")));
        return side ? { path: side.name, namespace: "nbagent-side" } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: "nbagent-side" }, (args) => ({
        contents: `const { join } = require("node:path");
const { loadCliBundle } = require(${JSON.stringify(resolve("src/cli/code-cache.ts"))});
module.exports = loadCliBundle(join(__dirname, ${JSON.stringify(args.path)}));`,
        loader: "js",
        resolveDir: resolve("."),
      }));
    },
  };
  const bundle = await build({
    ...codeCached,
    plugins: [sideStubs],
    metafile: true,
    entryPoints: { [CLI_BUNDLE]: "src/cli/dispatch.ts" },
    // sixel is sloppy-mode CommonJS (assigns an undeclared global): bundled it would throw.
    external: ["zeromq", "sharp", "turndown", "ws", "sixel"],
    define: { "import.meta.url": "__nbagentImportMetaUrl", __NBAGENT_VERSION__: version },
  });
  const bundleFile = bundle.outputFiles.find((f) => f.path.endsWith(".cjs"));
  const bundleName = basename(bundleFile.path);
  checkCodeCacheable(bundleFile);
  const held = Object.keys(bundle.metafile.inputs).find((f) =>
    /node_modules[\\/](@modelcontextprotocol|zod|ajv|pngjs|highlight\.js|wrap-ansi)[\\/]/.test(f),
  );
  if (held)
    throw new Error(`the CLI bundle holds ${held}: take it from src/mcp/sdk.ts or src/render/vendor.ts`);
  // The entry, dist/cli/nbagent.js: `nbagent --version` prints the version written in here and
  // loads nothing else; every other command runs the bundle through its code cache
  // (src/cli/main.ts, src/cli/code-cache.ts). A CommonJS file, as the bundle is (dist/cli has its own
  // package.json saying so, and no ES module of tsc's): node loads a CommonJS main without its ES
  // module loader, whose start (the loader, node:fs's ES facade, which loads node:stream) was a
  // tenth of a short command (docs/architecture.md, "How the built command starts").
  const entry = await build({
    entryPoints: { nbagent: "src/cli/main.ts" },
    outdir: cliDir,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    define: {
      __NBAGENT_VERSION__: version,
      __NBAGENT_CLI_BUNDLE__: JSON.stringify(`./${bundleName}`),
      "import.meta.url": "__nbagentImportMetaUrl",
    },
    banner: { js: 'var __nbagentImportMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
    minify: true,
    logLevel: "warning",
    write: false,
  });
  // The bundle (with its map) before the entry that names it: a command started meanwhile finds it.
  for (const side of sides) writeAtomically(side.outputFiles);
  writeAtomically(bundle.outputFiles);
  writeAtomically([{ path: `${cliDir}/package.json`, contents: '{ "type": "commonjs" }\n' }]);
  writeAtomically(entry.outputFiles);
  // Earlier builds' files go (not this one's, which a running nbagent may be loading): the ES module
  // chunks of builds before the bundle, other bundles and their caches.
  for (const name of readdirSync(cliDir, { withFileTypes: true })) {
    const file = name.name;
    const ours = [bundleName, ...sides.map((x) => x.name)].some(
      (b) => file === b || file === `${b}.map` || file === `${b}.cache`,
    );
    if (name.isFile() && !ours && /^nbagent-.+\.(js|cjs)(\.map|\.cache|\.\d+\.tmp)?$/.test(file))
      rmSync(`${cliDir}/${file}`);
    // tsc's ES modules of src/cli from builds before it left src/cli out (tsconfig.build.json):
    // CommonJS by this folder's package.json now, and never loaded.
    else if (name.isFile() && file !== "nbagent.js" && /\.(js|js\.map|d\.ts)$/.test(file))
      rmSync(`${cliDir}/${file}`);
  }
  rmSync(`${cliDir}/nbagent.js.map`, { force: true }); // the entry of chunked builds had one
  // The code caches, made by real commands in a state folder of their own, no view socket: the main
  // bundle's by a short one (a `call notebook` read of the demo notebook), whose functions are most
  // of what short commands run; the SDK bundle's by an MCP session. V8 writes the functions that
  // ran; each is written when its process exits (src/cli/code-cache.ts).
  const state = mkdtempSync(join(tmpdir(), "nbagent-build-"));
  try {
    const warm = spawnSync(
      process.execPath,
      [
        `${cliDir}/nbagent.js`,
        "call",
        "notebook",
        JSON.stringify({ action: "read", notebook_path: resolve("examples/demo.ipynb") }),
      ],
      {
        env: { ...process.env, NBAGENT_STATE_DIR: state, NBAGENT_VIEW: "0" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    if (warm.status !== 0) throw new Error(`the CLI's warm-up run failed: ${warm.stderr}`);
    // The SDK bundle's cache: an MCP session that lists the tools, then ends with its input.
    const rpc = (id, method, params = {}) => JSON.stringify({ jsonrpc: "2.0", id, method, params });
    const session = [
      rpc(1, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "nbagent-build", version: "0" },
      }),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      rpc(2, "tools/list"),
      rpc(3, "resources/templates/list"),
    ];
    const mcp = spawnSync(process.execPath, [`${cliDir}/nbagent.js`, "mcp"], {
      input: `${session.join("\n")}\n`,
      env: { ...process.env, NBAGENT_STATE_DIR: state, NBAGENT_VIEW: "0" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    if (mcp.status !== 0 || !mcp.stdout.toString().includes('"id":2'))
      throw new Error(`the MCP warm-up run failed (${mcp.status}): ${mcp.stderr}`);
  } finally {
    rmSync(state, { recursive: true, force: true });
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

/**
 * A bundle that runs from a code cache (src/cli/code-cache.ts): no dynamic import() (node 20 has
 * none for such a script), and ASCII only.
 */
function checkCodeCacheable(file) {
  // A script run from a code cache has no import() in node 20 ("A dynamic import callback was not
  // specified"): a package left outside is required (createRequire), never import()ed.
  // One byte a character: V8 then keeps the 1.5 MB source as a one-byte string, which node reads
  // in well under a millisecond; a single non-ASCII character (esbuild leaves them in regular
  // expression literals) made it a two-byte string, 5-10 ms to decode on every command. Sources
  // write such characters in a regular expression as \u escapes.
  const wide = /.{0,60}[^\x00-\x7f].{0,20}/.exec(file.text);
  if (wide)
    throw new Error(`${basename(file.path)} is not ASCII: ${wide[0]} (use a \\u escape in the source)`);
  const dynamic = /\bimport\(\s*["'`]([^"'`]+)/.exec(file.text);
  if (dynamic) throw new Error(`${basename(file.path)} keeps import("${dynamic[1]}"): require it instead`);
}
