/**
 * nbagent installed as users install it: `npm pack`, then `npm install -g` of the tarball into a
 * clean prefix, then `<prefix>/bin/nbagent mcp` driven by the SDK client. The package must hold the
 * bundled command (its entry, its bundle and the bundle's code cache), the kernel prelude and the fork server (the second kernel forks).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { NPM_ENV, packInto } from "../pack.js";
import { ROOT, type StdioServer, stdioServer, tempDir, textOf } from "./helpers.js";

const exec = promisify(execFile);
let server: StdioServer | undefined;

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs"], { cwd: ROOT });
});

after(async () => {
  await server?.client.close();
});

test("the packed tarball installs globally and `nbagent mcp` serves the tools", async () => {
  const work = await tempDir("nbagent-mcp-install-");
  const { tarball, files } = await packInto(work, [
    "dist/cli/nbagent.js",
    "dist/runtime/prelude.py",
    "dist/kernel/local/forkserver.py",
  ]);
  // The bundle of every command and the MCP SDK's bundle (src/mcp/sdk.ts), each with its code
  // cache, beside the entry.
  for (const name of ["nbagent-cli", "nbagent-mcp-sdk"]) {
    assert.ok(
      files.some((f) => new RegExp(`^dist/cli/${name}-[A-Z0-9]+\\.cjs$`).test(f)),
      `the bundle ${name} is missing`,
    );
    assert.ok(
      files.some((f) => new RegExp(`^dist/cli/${name}-[A-Z0-9]+\\.cjs\\.cache$`).test(f)),
      `the code cache of ${name} is missing`,
    );
  }

  const prefix = join(work, "prefix");
  await exec("npm", ["install", "-g", "--prefix", prefix, "--prefer-offline", tarball], {
    cwd: work,
    env: NPM_ENV,
    maxBuffer: 1 << 24,
  });

  const project = await tempDir("nbagent-mcp-installed-");
  server = await stdioServer(["--cwd", project], {}, [join(prefix, "bin/nbagent")]);
  assert.match(server.client.getServerVersion()?.name ?? "", /^nbagent$/);
  const { tools } = await server.client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes("notebook") && names.includes("python"), String(names));

  // the prelude's helpers are there (prelude.py found in the installed package)
  const first = await server.client.callTool({
    name: "python",
    arguments: { cells: [{ code: "import os\nprint(callable(read), os.getcwd())" }] },
  });
  assert.equal(textOf(first).trim(), `True ${project}`, server.stderr());
  // from the third kernel on, kernels fork from the fork server (forkserver.py found in the package)
  for (const session of ["second", "third"]) {
    const r = await server.client.callTool({
      name: "python",
      arguments: {
        session,
        cells: [{ code: "print('forkserver.py' in open('/proc/self/cmdline').read())" }],
      },
    });
    if (session === "third") assert.equal(textOf(r).trim(), "True", server.stderr());
    else assert.equal(r.isError, undefined, textOf(r));
  }
});
