/**
 * The command as installed is one bundled file (dist/cli/nbagent.js, see scripts/bundle.mjs), not
 * the sources the other tests run through tsx. Built afresh here, it must find its assets (the
 * kernel prelude, the fork server) and do real work: a notebook edit, a python call with the
 * prelude, and a run of several notebooks (the later ones forked by the fork server).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { before, test } from "node:test";
import { promisify } from "node:util";
import { type Json, ROOT, readNb, tempDir, validate, writeNb } from "./helpers.js";

const exec = promisify(execFile);
const BUNDLE = join(ROOT, "dist/cli/nbagent.js");

async function bundled(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BUNDLE, ...args], { cwd, maxBuffer: 1 << 24 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

before(async () => {
  await exec(process.execPath, ["scripts/copy-assets.mjs"], { cwd: ROOT });
  await exec(process.execPath, ["scripts/bundle.mjs"], { cwd: ROOT });
});

test("the bundled command edits, runs python with the prelude, and runs notebooks with forked kernels", async () => {
  const dir = await tempDir();
  const nb = await writeNb(join(dir, "a.ipynb"), [["code", "print('a')"]]);
  const edit = await bundled(
    [
      "call",
      "notebook",
      JSON.stringify({ action: "edit", notebook_path: "a.ipynb", cell_index: 0, content: "print('edited')" }),
      "--json",
    ],
    dir,
  );
  assert.equal(edit.code, 0, edit.stderr);
  assert.equal((JSON.parse(edit.stdout) as Json).isError, false);
  assert.equal(await validate(nb), "ok");

  const py = await bundled(
    [
      "call",
      "python",
      JSON.stringify({ cells: [{ code: "import os\nprint(callable(read), os.getcwd())" }] }),
    ],
    dir,
  );
  assert.equal(py.code, 0, py.stderr);
  assert.equal(py.stdout.trim(), `True ${dir}`);

  // The later notebooks' kernels come from the fork server, whose script the bundle must find.
  const forked = await writeNb(join(dir, "forked.ipynb"), [
    ["code", "print('forkserver.py' in open('/proc/self/cmdline').read())"],
  ]);
  const out = join(dir, "out");
  await mkdir(out);
  await copyFile(nb, join(dir, "b.ipynb"));
  const run = await bundled(["run", "--quiet", "-o", out, "a.ipynb", "b.ipynb", "forked.ipynb"], dir);
  assert.equal(run.code, 0, run.stderr);
  for (const name of ["a.ipynb", "b.ipynb"]) {
    assert.deepEqual((await readNb(join(out, name))).cells[0].outputs[0].text, ["edited\n"], name);
  }
  assert.deepEqual((await readNb(join(out, "forked.ipynb"))).cells[0].outputs[0].text, ["True\n"]);
  assert.equal(await validate(forked), "ok");
});

/** The files and packages `nbagent ARGS…` (the bundle) loads, as module URLs (a loader hook lists them). */
async function loadedBy(
  args: string[],
  cwd: string,
): Promise<{ code: number; urls: string[]; stdout: string }> {
  const hook = join(cwd, "list-loads.mjs");
  await writeFile(
    hook,
    'import { register } from "node:module";\n' +
      `register("data:text/javascript," + encodeURIComponent(${JSON.stringify(
        'export async function load(url, context, next) { if (!url.startsWith("node:")) process._rawDebug("LOADED " + url); return next(url, context); }',
      )}));\n`,
  );
  let out: { code: number; stdout: string; stderr: string };
  try {
    const { stdout, stderr } = await exec(process.execPath, ["--import", hook, BUNDLE, ...args], { cwd });
    out = { code: 0, stdout, stderr };
  } catch (err) {
    out = err as { code: number; stdout: string; stderr: string };
  }
  const urls = [...out.stderr.matchAll(/^LOADED (.+)$/gm)].map((m) => m[1]);
  return { code: out.code, urls, stdout: out.stdout };
}

/**
 * The source files the loaded bundle chunks were built from, as repo paths ("src/tools/notebook/notebook.ts"),
 * read from each chunk's source map (the chunks are minified: the map is what names their sources).
 */
async function sourcesOf(urls: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const url of urls.filter((u) => u.startsWith("file:") && u.includes("/dist/cli/"))) {
    const map = JSON.parse(await readFile(new URL(`${url}.map`), "utf8")) as { sources: string[] };
    for (const source of map.sources) out.push(source.replace(/^(\.\.\/)+/, ""));
  }
  return out;
}

/** Whether a loaded bundle chunk was built from the source file `src`. */
async function chunkHolds(urls: string[], src: string): Promise<boolean> {
  return (await sourcesOf(urls)).includes(src);
}

/** Whether the loaded modules hold gateway code (a bundle chunk built from src/kernel/gateway) or ws. */
async function gatewayLoaded(urls: string[]): Promise<{ gatewayCode: boolean; ws: boolean }> {
  const gatewayCode = (await sourcesOf(urls)).some((s) => s.startsWith("src/kernel/gateway/"));
  return { gatewayCode, ws: urls.some((u) => u.includes("/node_modules/ws/")) };
}

test("--version and notebook read load no gateway code and no ws; a gateway call loads both", async () => {
  const dir = await tempDir();
  await writeNb(join(dir, "a.ipynb"), [["code", "print('a')"]]);
  const version = await loadedBy(["--version"], dir);
  assert.equal(version.code, 0);
  assert.deepEqual(await gatewayLoaded(version.urls), { gatewayCode: false, ws: false }, "--version");
  const read = await loadedBy(["notebook", "read", "a.ipynb"], dir);
  assert.equal(read.code, 0);
  assert.match(read.stdout, /^a\.ipynb: 1 cells?, nbformat 4\.\d/);
  assert.deepEqual(await gatewayLoaded(read.urls), { gatewayCode: false, ws: false }, "notebook read");
  // A read is the notebook tool alone: no executor, no kernel client (a toolbox would load both).
  assert.equal(await chunkHolds(read.urls, "src/tools/notebook/executor.ts"), false, "read: executor");
  assert.equal(await chunkHolds(read.urls, "src/kernel/client.ts"), false, "read: kernel client");
  // Nor the session machinery (wording a failure needs only its error types: runtime/errors.ts), nor
  // the TypeBox functions the parameter checks do not use (tools/schema.ts imports them by name).
  assert.equal(await chunkHolds(read.urls, "src/runtime/sessions.ts"), false, "read: sessions");
  const typebox = (await sourcesOf(read.urls)).filter((s) => s.includes("@sinclair/typebox/"));
  assert.ok(
    typebox.some((s) => s.endsWith("/value/check/check.mjs")),
    "read: TypeBox's Check",
  );
  assert.ok(!typebox.some((s) => s.endsWith("/value/cast/cast.mjs")), "read: TypeBox's Value.Cast");
  const edit = await loadedBy(
    ["notebook", "edit", "a.ipynb", "--index", "0", "--content", "print('b')"],
    dir,
  );
  assert.equal(edit.code, 0, edit.stdout);
  assert.equal(await chunkHolds(edit.urls, "src/tools/notebook/executor.ts"), true, "edit: the toolbox");
  // The split still works in the bundle: a gateway (none listens on port 1) loads its code on demand.
  const call = await loadedBy(
    ["call", "python", JSON.stringify({ cells: [{ code: "1" }] }), "--gateway", "http://127.0.0.1:1"],
    dir,
  );
  assert.notEqual(call.code, 0);
  assert.deepEqual(await gatewayLoaded(call.urls), { gatewayCode: true, ws: true }, "a gateway call");
});
