/**
 * The command as installed is a small entry (dist/cli/nbagent.js) and one bundle beside it run from
 * a V8 code cache (see scripts/bundle.mjs, src/cli/code-cache.ts), not the sources the other tests
 * run through tsx. Built afresh here, it must find its assets (the kernel prelude, the fork server)
 * and do real work: a notebook edit, a python call with the prelude, and a run of several notebooks
 * (the later ones forked by the fork server); --version loads nothing else, a read no gateway code;
 * the cache is used, and one that is missing or not V8's is replaced without changing the answer.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  chmod,
  chown,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { before, test } from "node:test";
import { pathToFileURL } from "node:url";
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

/**
 * What `nbagent ARGS…` (the bundle) loads: the ES modules (a loader hook lists their URLs) and the
 * packages and files required through CommonJS (a preloaded hook on Module._load lists them).
 */
async function loadedBy(
  args: string[],
  cwd: string,
  bundle = BUNDLE,
): Promise<{ code: number; urls: string[]; required: string[]; stdout: string; stderr: string }> {
  const hook = join(cwd, "list-loads.mjs");
  await writeFile(
    hook,
    'import { register } from "node:module";\n' +
      `register("data:text/javascript," + encodeURIComponent(${JSON.stringify(
        'export async function load(url, context, next) { if (!url.startsWith("node:")) process._rawDebug("LOADED " + url); return next(url, context); }',
      )}));\n`,
  );
  const requireHook = join(cwd, "list-requires.cjs");
  await writeFile(
    requireHook,
    'const M = require("node:module"); const load = M._load;\n' +
      'M._load = function (request, ...rest) { if (!request.startsWith("node:")) process._rawDebug("REQUIRED " + request); return load.call(this, request, ...rest); };\n',
  );
  let out: { code: number; stdout: string; stderr: string };
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ["--import", hook, "--require", requireHook, bundle, ...args],
      { cwd },
    );
    out = { code: 0, stdout, stderr };
  } catch (err) {
    out = err as { code: number; stdout: string; stderr: string };
  }
  const urls = [...out.stderr.matchAll(/^LOADED (.+)$/gm)].map((m) => m[1]);
  const required = [...out.stderr.matchAll(/^REQUIRED (.+)$/gm)].map((m) => m[1]);
  return { code: out.code, urls, required, stdout: out.stdout, stderr: out.stderr };
}

/** The bundle beside the entry (its name carries a hash of its content) and its code cache. */
async function bundleFiles(): Promise<{ bundle: string; cache: string }> {
  const name = (await readdir(join(ROOT, "dist/cli"))).find((f) => /^nbagent-cli-.+\.cjs$/.test(f));
  assert.ok(name, "the bundle is beside the entry");
  const bundle = join(ROOT, "dist/cli", name);
  return { bundle, cache: `${bundle}.cache` };
}

test("--version loads only the entry; notebook read loads no ws; a gateway call loads it", async () => {
  const dir = await tempDir();
  await writeNb(join(dir, "a.ipynb"), [["code", "print('a')"]]);
  const version = await loadedBy(["--version"], dir);
  assert.equal(version.code, 0);
  // The entry is CommonJS (dist/cli/package.json); with a loader hook registered, node hands it to
  // the hook too. Nothing else of the package loads.
  assert.deepEqual(
    version.urls.filter((u) => u.includes("/dist/")),
    [pathToFileURL(BUNDLE).href],
    "--version: the entry alone",
  );
  assert.deepEqual(
    version.required.filter((r) => r !== BUNDLE),
    [],
    "--version requires nothing",
  );
  const read = await loadedBy(["notebook", "read", "a.ipynb"], dir);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /^a\.ipynb: 1 cells?, nbformat 4\.\d/);
  assert.ok(!read.required.some((r) => /^(ws|zeromq|sharp)$/.test(r)), `notebook read: ${read.required}`);
  // The gateway code runs on demand: a gateway (none listens on port 1) requires ws.
  const call = await loadedBy(
    ["call", "python", JSON.stringify({ cells: [{ code: "1" }] }), "--gateway", "http://127.0.0.1:1"],
    dir,
  );
  assert.notEqual(call.code, 0);
  assert.ok(call.required.includes("ws"), `a gateway call: ${call.required}`);
});

test("the bundle runs from its code cache; a missing or foreign cache is replaced, the command unchanged", async () => {
  const dir = await tempDir();
  await writeNb(join(dir, "a.ipynb"), [["code", "print('a')"]]);
  const { cache } = await bundleFiles();
  const read = () => bundled(["notebook", "read", "a.ipynb"], dir);
  const built = await readFile(cache);
  const first = await read();
  assert.equal(first.code, 0, first.stderr);
  // Accepted: V8 took it, so the command wrote none.
  assert.deepEqual(await readFile(cache), built, "the build's cache is used as it is");
  for (const bad of [undefined, Buffer.from("not a V8 code cache")]) {
    if (bad) await writeFile(cache, bad);
    else await rm(cache);
    const again = await read();
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, first.stdout, "the same answer without a usable cache");
    const fresh = await readFile(cache);
    assert.ok(
      fresh.length > 1000 && !fresh.equals(bad ?? Buffer.alloc(0)),
      "a fresh cache is written at exit",
    );
    const third = await read();
    assert.equal(third.stdout, first.stdout);
    assert.deepEqual(await readFile(cache), fresh, "and used from then on");
  }
  // With source maps on, the bundle is required as a module (node maps only those): same answer.
  const mapped = await exec(
    process.execPath,
    ["--enable-source-maps", BUNDLE, "notebook", "read", "a.ipynb"],
    {
      cwd: dir,
    },
  );
  assert.equal(mapped.stdout, first.stdout);
});

test("as another user, with the package's folder not writable: the cache goes to that user's state directory", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to run the command as nobody");
  const NOBODY = 65534;
  const { bundle } = await bundleFiles();
  // A read-only copy of the built command (under dist/, as installed packages keep it), no cache.
  const copy = join(ROOT, "dist", `cli-readonly-${process.pid}`);
  const base = await mkdtemp(join("/tmp", "nbagent-cache-user-"));
  try {
    await mkdir(copy);
    await copyFile(BUNDLE, join(copy, "nbagent.js"));
    await copyFile(join(dirname(BUNDLE), "package.json"), join(copy, "package.json"));
    await copyFile(bundle, join(copy, basename(bundle)));
    await chmod(copy, 0o755);
    await chmod(base, 0o755);
    const work = join(base, "work");
    await mkdir(work, { mode: 0o755 });
    await writeNb(join(work, "a.ipynb"), [["code", "print('a')"]]);
    await chmod(join(work, "a.ipynb"), 0o644);
    const state = join(base, "state");
    await mkdir(state, { mode: 0o700 });
    await chown(state, NOBODY, NOBODY);
    const read = () =>
      exec(process.execPath, [join(copy, "nbagent.js"), "notebook", "read", "a.ipynb"], {
        cwd: work,
        uid: NOBODY,
        gid: NOBODY,
        env: { ...process.env, NBAGENT_STATE_DIR: state },
      });
    const first = await read();
    assert.match(first.stdout, /^a\.ipynb: 1 cells?, nbformat 4\.\d/);
    assert.deepEqual(
      (await readdir(copy)).filter((f) => f.includes(".cache")),
      [],
      "nothing written in the package's folder",
    );
    const cache = join(state, "cli-cache", `${basename(bundle)}.cache`);
    const st = await stat(cache);
    assert.equal(st.uid, NOBODY);
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal((await stat(dirname(cache))).mode & 0o777, 0o700);
    const written = await readFile(cache);
    const second = await read();
    assert.equal(second.stdout, first.stdout);
    assert.deepEqual(await readFile(cache), written, "used, not written again");
  } finally {
    await rm(copy, { recursive: true, force: true });
    await rm(base, { recursive: true, force: true });
  }
});
