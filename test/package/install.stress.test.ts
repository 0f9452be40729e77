/**
 * The package as a user gets it: `npm pack`, the tarball installed into an empty project (with
 * @types/node and pi, as a TypeScript project that also uses pi has them), and then every way in:
 * each `exports` entry imported in plain Node ESM; a TypeScript file using the public API (the
 * README's "Use it as a library" code as written, and checks that the declarations are not `any`)
 * type-checked with moduleResolution node16, bundler and node10, the README's code then run; the pi
 * extension given to pi's SDK as a function from a plain import, and loaded by pi's own loader from
 * the package directory; `nbagent mcp` through the MCP SDK client; `nbagent --version`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import type { ExtensionFactory } from "@mariozechner/pi-coding-agent";
import { textOf as mcpText, type StdioServer, stdioServer } from "../mcp/helpers.js";
import { NPM_ENV, packInto } from "../pack.js";
import { assertRunsPython, type Pi, ROOT, startPi, tempDir, whereScript } from "../pi/helpers.js";

const exec = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
/** The version of a package installed in this checkout (the temp project gets the same). */
const installed = (name: string) =>
  (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string })
    .version;
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

let project = "";
let nbagentDir = "";
const open: { close(): Promise<void> }[] = [];

before(async () => {
  // the bundles and assets the tarball holds (written atomically: other tests may be loading them);
  // the declarations come from the build the test runner makes (npm run build)
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs"], { cwd: ROOT });
  const work = await tempDir("nbagent-package-");
  const { tarball } = await packInto(work, [
    "dist/index.js",
    "dist/index.d.ts",
    "dist/pi/index.js",
    "dist/pi/index.d.ts",
    "dist/cli/nbagent.js",
    "dist/view/page/index.html",
    "dist/view/page/page.js",
    "dist/view/page/page.css",
    "dist/view/page/frame.html",
    "dist/view/page/frame.js",
    "dist/view/page/frame.css",
    "CHANGELOG.md",
  ]);

  project = join(work, "project");
  nbagentDir = join(project, "node_modules/nbagent");
  await mkdir(project);
  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "a-project", private: true, type: "module" }),
  );
  await exec(
    "npm",
    [
      "install",
      "--prefer-offline",
      tarball,
      `@types/node@${installed("@types/node")}`,
      `@mariozechner/pi-coding-agent@${installed("@mariozechner/pi-coding-agent")}`,
    ],
    { cwd: project, env: NPM_ENV, maxBuffer: 1 << 24 },
  );
});

after(async () => {
  for (const o of open) await o.close();
});

test("every exports entry imports in plain Node ESM", async () => {
  const manifest = JSON.parse(readFileSync(join(nbagentDir, "package.json"), "utf8")) as {
    exports: Record<string, unknown>;
  };
  const entries = Object.keys(manifest.exports).map((key) => `nbagent${key.slice(1)}`);
  for (const known of ["nbagent", "nbagent/pi", "nbagent/package.json"])
    assert.ok(entries.includes(known), known);
  // node itself, no loader: each entry's export names, or the error it threw
  await writeFile(
    join(project, "entries.mjs"),
    `const out = {};
for (const entry of ${JSON.stringify(entries)}) {
  try {
    const m = await import(entry, entry.endsWith(".json") ? { with: { type: "json" } } : undefined);
    out[entry] = Object.keys(m).sort();
    if (entry.endsWith(".json")) out.version = m.default.version;
    if (entry === "nbagent/pi") out.piDefault = typeof m.default;
  } catch (err) {
    out[entry] = String(err);
  }
}
console.log(JSON.stringify(out));
`,
  );
  const { stdout } = await exec(process.execPath, ["entries.mjs"], { cwd: project });
  const out = JSON.parse(stdout) as Record<string, string[] | string>;
  for (const entry of entries) assert.ok(Array.isArray(out[entry]), `${entry}: ${out[entry]}`);
  for (const name of [
    "createToolbox",
    "createNotebookTool",
    "createPythonTool",
    "createRuntime",
    "resolveSettings",
  ])
    assert.ok(out.nbagent.includes(name), `nbagent: ${out.nbagent}`);
  assert.deepEqual(out["nbagent/pi"], ["createNbagentExtension", "default"]);
  assert.equal(out.piDefault, "function");
  assert.deepEqual(out["nbagent/package.json"], ["default"]);
  assert.equal(out.version, pkg.version);
});

test("the installed package holds the whole view page: everything its HTML and CSS load (offline, no CDN)", () => {
  const dir = join(nbagentDir, "dist/view/page");
  const read = (file: string) => readFileSync(join(dir, file), "utf8");
  const loaded = [
    ...[...read("index.html").matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
    ...[...read("frame.html").matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
    // the fonts a browser takes from page.css: the woff2 of each @font-face (the first source)
    ...[...read("page.css").matchAll(/url\(["']?([^)"']+\.woff2)["']?\)/g)].map((m) => m[1]),
  ];
  assert.ok(loaded.filter((f) => f.endsWith(".woff2")).length >= 20, "KaTeX's fonts");
  for (const file of loaded) {
    assert.doesNotMatch(file, /^(https?:)?\/\//, `${file}: loaded from the network`);
    assert.ok(existsSync(join(dir, file)), `${file} is missing from the package`);
  }
});

/** The README's "Use it as a library" code, as written. */
function readmeLibraryCode(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.split("\n## Use it as a library\n")[1]?.split("\n## ")[0];
  assert.ok(section, "README has no 'Use it as a library' section");
  const code = section.match(/```ts\n([\s\S]*?)```/)?.[1];
  assert.ok(code, "no ts block in 'Use it as a library'");
  return code;
}

/** Uses that compile only with real declarations: were a type `any`, an expected error goes unused. */
const CHECKS = `import {
  createNotebookTool,
  createPythonTool,
  createRuntime,
  createToolbox,
  type NotebookDetails,
  type PythonToolDetails,
  pythonDescriptor,
  resolveSettings,
  type RuntimeOptions,
  type Settings,
  type Tool,
  type ToolResult,
} from "nbagent";

export function check(settings: Settings, options: RuntimeOptions): void {
  const toolbox = createToolbox({ cwd: ".", settings });
  const python: Tool<unknown, PythonToolDetails> = toolbox.get(pythonDescriptor);
  // @ts-expect-error a cell's code is a string
  void toolbox.get(pythonDescriptor).execute("id", { cells: [{ code: 1 }] });
  // @ts-expect-error the details' session is a string
  const session: number = ({} as ToolResult<PythonToolDetails>).details.session;
  // @ts-expect-error resolveSettings takes flags and an environment
  resolveSettings();
  const runtime: Promise<void> = createRuntime(options).dispose();
  const notebook = createNotebookTool({ cwd: "." });
  const details: Promise<ToolResult<NotebookDetails>> = notebook.execute("id", { action: "read", notebook_path: "a.ipynb" });
  void [python, session, details, runtime, createPythonTool];
}
`;

/** The pi entry's declarations, used with pi's own types. */
const PI_CHECKS = `import type { ExtensionFactory } from "@mariozechner/pi-coding-agent";
import nbagentExtension, { createNbagentExtension, type NbagentExtensionOptions } from "nbagent/pi";

const options: NbagentExtensionOptions = { waitSeconds: 120 };
export const extensions: ExtensionFactory[] = [nbagentExtension, createNbagentExtension(options)];
// @ts-expect-error waitSeconds is a number
createNbagentExtension({ waitSeconds: "soon" });
`;

async function tsc(config: Record<string, unknown>, name: string): Promise<void> {
  await writeFile(join(project, name), JSON.stringify(config, null, 2));
  try {
    await exec(process.execPath, [TSC, "-p", name], { cwd: project, maxBuffer: 1 << 24 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    assert.fail(`tsc -p ${name}:\n${e.stdout}${e.stderr}`);
  }
}

test("a TypeScript project type-checks the public API with node16, bundler and node10 resolution, and runs the README's code", async () => {
  await writeFile(join(project, "readme.ts"), readmeLibraryCode());
  await writeFile(join(project, "checks.ts"), CHECKS);
  await writeFile(join(project, "pi.ts"), PI_CHECKS);
  const common = { target: "ES2022", strict: true, types: ["node"] };
  const resolutions = {
    node16: { module: "Node16", moduleResolution: "Node16" },
    bundler: { module: "ESNext", moduleResolution: "Bundler" },
  };
  for (const [name, resolution] of Object.entries(resolutions)) {
    // nbagent's own declarations are checked too (skipLibCheck off); node16's output is run below
    const emit = name === "node16" ? { outDir: "out" } : { noEmit: true };
    await tsc(
      {
        compilerOptions: { ...common, ...resolution, ...emit, skipLibCheck: false },
        files: ["readme.ts", "checks.ts"],
      },
      `tsconfig.${name}.json`,
    );
    // with pi's types, whose dependencies' declarations do not all check (@anthropic-ai/sdk's name
    // paths on its build machine): their errors are skipped, as most projects do (skipLibCheck)
    await tsc(
      { compilerOptions: { ...common, ...resolution, noEmit: true, skipLibCheck: true }, files: ["pi.ts"] },
      `tsconfig.pi-${name}.json`,
    );
  }
  // the older node10 resolution, which reads no exports map: package.json's types and typesVersions
  await tsc(
    {
      compilerOptions: {
        ...common,
        module: "CommonJS",
        moduleResolution: "Node10",
        noEmit: true,
        skipLibCheck: true,
      },
      files: ["checks.ts", "pi.ts"],
    },
    "tsconfig.node10.json",
  );
  // the README's code, compiled by node16's settings, runs against the installed package
  const { stdout } = await exec(process.execPath, ["out/readme.js"], { cwd: project });
  assert.equal(stdout, "42\n[ 'ok' ]\nhello.ipynb: 1 cell\n");
});

async function runsPython(p: Pi, cwd: string): Promise<void> {
  open.push(p);
  await assertRunsPython(p, cwd);
}

test("pi's SDK runs the extension given as a function from a plain import of nbagent/pi", async () => {
  const mod = (await import(pathToFileURL(join(nbagentDir, "dist/pi/index.js")).href)) as {
    default: ExtensionFactory;
    createNbagentExtension: (options: object) => ExtensionFactory;
  };
  const cwd = await tempDir("nbagent-package-pi-sdk-");
  await runsPython(await startPi(cwd, [], whereScript(), [mod.default]), cwd);
  const other = await tempDir("nbagent-package-pi-sdk-options-");
  await runsPython(
    await startPi(other, [], whereScript(), [mod.createNbagentExtension({ waitSeconds: 120 })]),
    other,
  );
});

test("pi's own loader loads the installed package directory", async () => {
  const cwd = await tempDir("nbagent-package-pi-dir-");
  await runsPython(await startPi(cwd, [nbagentDir], whereScript()), cwd);
});

test("the installed nbagent serves the tools to the MCP SDK client and prints package.json's version", async () => {
  const bin = join(project, "node_modules/.bin/nbagent");
  const { stdout } = await exec(bin, ["--version"]);
  assert.equal(stdout, `${pkg.version}\n`);
  const cwd = await tempDir("nbagent-package-mcp-");
  const server: StdioServer = await stdioServer(["--cwd", cwd], {}, [bin]);
  open.push(server.client);
  assert.equal(server.client.getServerVersion()?.name, "nbagent");
  assert.equal(server.client.getServerVersion()?.version, pkg.version);
  const { tools } = await server.client.listTools();
  assert.deepEqual(
    tools.map((t) => t.name),
    ["notebook", "python", "artifact", "runs", "kernels"],
  );
  const r = await server.client.callTool({
    name: "python",
    arguments: { cells: [{ code: "print(6 * 7)" }] },
  });
  assert.equal(mcpText(r), "42", server.stderr());
});
