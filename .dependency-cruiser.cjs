// The layer rules of src/ (docs/architecture.md, "Layers"), checked by dependency-cruiser:
//   npm run lint:layers        (scripts/test.mjs runs it before the unit tier; CI fails on a violation)
//
// Layers, top to bottom; an arrow points down only, and may skip floors (tools/ may import sys/):
//
//   cli/, src/index.ts    the command; the library entry
//   mcp/, pi/             the MCP server; the pi extension
//   view/, render/        `nbagent view` (its server, hub and page); terminal views of tool results
//   tools/                the tools: descriptors, and the only place that turns values into words
//   runtime/              sessions, settings, the kernel choice, events
//   kernel/, notebook/, output/   kernels and backends; the notebook file; a call's output and artifacts
//   sys/, src/assets.ts   the operating system and Node, once; where the package's files are
//
// Folders on one floor do not import each other either (kernel/ ↛ notebook/, view/ ↛ render/,
// mcp/ ↛ pi/). Type-only imports count (tsPreCompilationDeps): a type from a higher layer is a
// dependency on it all the same.
//
// No circular imports among src/ modules (type-only imports included). An exception would be listed
// in KNOWN_CYCLES with why; each allows only that exact cycle (a longer one through the same files
// still fails). There is none, and no exception to the layers either.

/** Bottom first. Each entry: one folder (or file) of src/, by a path regex. */
const FLOORS = [
  [
    { name: "sys", path: "^src/sys/" },
    { name: "assets", path: "^src/assets\\.ts$" },
  ],
  [
    { name: "kernel", path: "^src/kernel/" },
    { name: "notebook", path: "^src/notebook/" },
    { name: "output", path: "^src/output/" },
  ],
  [{ name: "runtime", path: "^src/runtime/" }],
  [{ name: "tools", path: "^src/tools/" }],
  [
    { name: "view", path: "^src/view/" },
    { name: "render", path: "^src/render/" },
  ],
  [
    { name: "mcp", path: "^src/mcp/" },
    { name: "pi", path: "^src/pi/" },
  ],
  [
    { name: "cli", path: "^src/cli/" },
    { name: "index", path: "^src/index\\.ts$" },
  ],
];

/**
 * Cycles allowed, each exactly as it is: { name, modules: [the cycle's files], and a comment saying
 * why it stays }. The rule no-circular-but-<name> then allows that cycle and no other through those
 * files. Empty: src/ has no import cycle (the last ones, runtime/backends.ts ↔ kernel-choice.ts,
 * tools/bundle-text.ts ↔ output-text.ts, runtime/events.ts ↔ event-output.ts and
 * tools/kernel-text.ts ↔ queue-holder.ts, were taken apart rather than listed).
 */
const KNOWN_CYCLES = [];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const exactly = (modules) => `^(${modules.map(escape).join("|")})$`;

const layerRules = FLOORS.flatMap((floor, i) => {
  const above = FLOORS.slice(i + 1).flat();
  return floor.map((part) => {
    const peers = floor.filter((p) => p !== part);
    const forbidden = [...peers, ...above];
    return {
      name: `layer-${part.name}`,
      severity: "error",
      comment:
        `${part.name} may not import ${forbidden.map((p) => p.name).join(", ")}: ` +
        "imports point down only, to a lower floor (docs/architecture.md, Layers)",
      from: { path: part.path },
      to: { path: forbidden.map((p) => p.path) },
    };
  });
});

const allKnown = KNOWN_CYCLES.flatMap((c) => c.modules);

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "a module must not reach itself through its imports",
      from: { path: "^src/", pathNot: exactly(allKnown) },
      to: { circular: true },
    },
    ...KNOWN_CYCLES.map((cycle) => ({
      name: `no-circular-but-${cycle.name}`,
      severity: "error",
      comment: `only the known ${cycle.name} cycle (${cycle.modules.join(" ↔ ")}) is allowed`,
      from: { path: exactly(cycle.modules) },
      // matches a cycle that has some module outside the known pair
      to: { circular: true, via: { pathNot: exactly(cycle.modules) } },
    })),
    ...layerRules,
    {
      name: "no-tests-from-src",
      severity: "error",
      comment: "src/ is the package: it must not import the tests, benchmarks or scripts",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts)/" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "an import the cruiser cannot resolve is an edge it cannot check",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // type-only imports are dependencies too (the layers hold for types as for values)
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    // the view page (src/view/page) is compiled by its own tsconfig for the browser; its imports of
    // view/ are checked as view's all the same
    enhancedResolveOptions: {
      extensions: [".ts", ".js", ".mjs", ".json"],
      // packages' "exports" maps (the MCP SDK's subpaths), as Node resolves them
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "types", "default"],
      mainFields: ["module", "main", "types"],
    },
  },
};
