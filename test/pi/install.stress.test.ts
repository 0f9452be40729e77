/**
 * The pi extension from the packed package, set up as docs/pi.md tells a user to: `npm pack`, the
 * tarball installed into a project, then (1) a project extension file that re-exports `nbagent/pi`
 * (pi discovers .pi/extensions/ by itself) and (2) the installed package directory given to pi as
 * `pi -e` gives it (its pi manifest names dist/pi/index.js). Both run a scripted python call whose
 * kernel needs the package's prelude.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { NPM_ENV, packInto } from "../pack.js";
import { assertRunsPython, drawn, type Pi, ROOT, startPi, tempDir, whereScript } from "./helpers.js";

const exec = promisify(execFile);
const LONG = { timeout: 300_000 };
let project = "";
const open: Pi[] = [];

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs", "pi"], { cwd: ROOT });
  const work = await tempDir("nbagent-pi-pack-");
  const { tarball } = await packInto(work, [
    "dist/pi/index.js",
    "dist/runtime/prelude.py",
    "dist/kernel/local/forkserver.py",
  ]);
  project = join(work, "project");
  await mkdir(project);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "a-project", private: true }));
  await exec("npm", ["install", "--prefer-offline", tarball], {
    cwd: project,
    env: NPM_ENV,
    maxBuffer: 1 << 24,
  });
}, LONG);

after(async () => {
  for (const pi of open) await pi.close();
});

async function runsPython(p: Pi, cwd: string): Promise<void> {
  open.push(p);
  const result = await assertRunsPython(p, cwd);
  // Wide enough for any temp path (a line wider than the row is wrapped).
  const width = Math.max(80, cwd.length + 20);
  assert.ok(drawn(p.rows.get(result.toolCallId), width).some((l) => l.includes(`True ${cwd}`)));
}

test("a project extension file re-exporting nbagent/pi is found and loaded by pi", LONG, async () => {
  await mkdir(join(project, ".pi/extensions"), { recursive: true });
  await writeFile(join(project, ".pi/extensions/nbagent.ts"), 'export { default } from "nbagent/pi";\n');
  await runsPython(await startPi(project, [], whereScript()), project);
});

test("the installed package directory, given to pi as `pi -e` gives it", LONG, async () => {
  const cwd = await tempDir("nbagent-pi-dir-");
  await runsPython(await startPi(cwd, [join(project, "node_modules/nbagent")], whereScript()), cwd);
});

test(
  "a project extension file made with createNbagentExtension(options), as the README shows",
  LONG,
  async () => {
    await mkdir(join(project, ".pi/extensions"), { recursive: true });
    await writeFile(
      join(project, ".pi/extensions/nbagent.ts"),
      'import { createNbagentExtension } from "nbagent/pi";\nexport default createNbagentExtension({ waitSeconds: 120 });\n',
    );
    await runsPython(await startPi(project, [], whereScript()), project);
  },
);
