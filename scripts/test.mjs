#!/usr/bin/env node
// Runs the test files (test/**/*.test.ts) with node's own test runner through tsx, in tiers
// (a file's tier is in its name: `*.unit.test.ts`, `*.stress.test.ts`, else kernel; README "Tests"):
//
//   node scripts/test.mjs [--tier unit|kernel|stress|all] [--list] [substring…]
//
// --tier picks the tiers (comma-separated; default all), substrings keep only the files whose path
// contains one of them. The tiers run one after the other (unit first), each with its files in
// parallel and its own bound on every test and every file (a test that hangs fails at that bound
// instead of holding the run). --list prints each file's tier and runs nothing.
//
// What every run sets up, so the tests do not depend on the machine or on each other:
// - one temp directory (TMPDIR) for every file the tests and their kernels make, removed at the end
//   (NBAGENT_KEEP_TEST_TMP=1 keeps it), or by the next run when this one was killed;
// - Jupyter's directories (JUPYTER_PATH, JUPYTER_DATA_DIR, JUPYTER_CONFIG_DIR, JUPYTER_RUNTIME_DIR,
//   IPYTHONDIR) inside it, so kernelspecs, config and profiles of this machine's user stay out; the
//   python3 kernelspec there runs the chosen interpreter;
// - the interpreter the product would choose, once (NBAGENT_TEST_PYTHON; test/python.ts);
// - the layer rules of src/ (`npm run lint:layers`, .dependency-cruiser.cjs) when the whole unit tier
//   runs (no substring given): a violation fails the run before any test starts;
// - dist/ built when src/ is newer (`npm run -s build`), only when a selected file needs it: it runs
//   the CLI (test/cli.ts) or reads dist/ (scripts/dist-users.mjs finds which, from their imports);
//   the runner says which file and why, or that none does. The CLI tests run that bundle
//   (NBAGENT_TEST_CLI; test/cli.ts); one jupyter_server for the non-unit files that use
//   test/backends.ts (its url and token in the file NBAGENT_TEST_JUPYTER_SERVER names).
// The test processes and the server run under test/lifeline.mjs: when this runner ends, however it
// ends (SIGKILL included), they end too.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const ROOT = resolve(new URL("..", import.meta.url).pathname);
process.chdir(ROOT);

const TIER_NAMES = ["unit", "kernel", "stress"];
/** Each tier's bound on one test and on one file as a whole (node applies --test-timeout to both). */
const TIER_TIMEOUT_MS = { unit: 120_000, kernel: 420_000, stress: 600_000 };

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "fixtures" && name !== "__snapshots__") collect(p, out);
    } else if (name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

/**
 * A file's tier is in its name: `*.unit.test.ts` unit, `*.stress.test.ts` stress, any other
 * `*.test.ts` kernel (the default for a test that talks to a real kernel). Nothing to keep in step.
 */
function tierOfFile(file) {
  if (file.endsWith(".unit.test.ts")) return "unit";
  if (file.endsWith(".stress.test.ts")) return "stress";
  return "kernel";
}

// ---- arguments --------------------------------------------------------------------------------
const argv = process.argv.slice(2);
let tierArg = "all";
let list = false;
const filters = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--tier") tierArg = argv[++i] ?? "";
  else if (a.startsWith("--tier=")) tierArg = a.slice("--tier=".length);
  else if (a === "--list") list = true;
  else filters.push(a);
}
const wanted = tierArg === "all" ? TIER_NAMES : tierArg.split(",").map((t) => t.trim());
for (const t of wanted)
  if (!TIER_NAMES.includes(t)) {
    console.error(`--tier: unknown tier "${t}" (unit, kernel, stress or all)`);
    process.exit(2);
  }

const allFiles = collect("test").sort();
const tierOf = new Map(allFiles.map((f) => [f, tierOfFile(f)]));
const files = allFiles.filter(
  (f) => wanted.includes(tierOf.get(f)) && (filters.length === 0 || filters.some((s) => f.includes(s))),
);
if (list) {
  for (const f of files) console.log(`${tierOf.get(f).padEnd(7)}${f}`);
  process.exit(0);
}
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const byTier = TIER_NAMES.map((tier) => ({
  tier,
  files: files.filter((f) => tierOf.get(f) === tier),
})).filter((t) => t.files.length > 0);

// ---- layer rules ------------------------------------------------------------------------------
// With the whole unit tier (CI, `npm run test:unit`): src/'s imports keep to its layers.
if (wanted.includes("unit") && filters.length === 0) {
  const started = Date.now();
  console.error("test: layer rules (npm run -s lint:layers, .dependency-cruiser.cjs)");
  const r = spawnSync("npm", ["run", "-s", "lint:layers"], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error("test: src/ breaks its layer rules (above); no test ran");
    process.exit(1);
  }
  console.error(`test: layer rules kept, ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// ---- environment ------------------------------------------------------------------------------
const concurrency = process.env.NBAGENT_TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
removeStaleRuns();
const runTmp = mkdtempSync(join(tmpdir(), "nbagent-test-run-"));
writeFileSync(join(runTmp, "runner.pid"), String(process.pid));

/** Temp directories of earlier runs whose runner is gone without cleaning up (killed). */
function removeStaleRuns() {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith("nbagent-test-run-")) continue;
    const dir = join(tmpdir(), name);
    let pid;
    try {
      pid = Number(readFileSync(join(dir, "runner.pid"), "utf8"));
    } catch {
      continue; // not one of ours, or still being made
    }
    try {
      process.kill(pid, 0);
      continue; // that runner is still running
    } catch (err) {
      if (err.code === "EPERM") continue;
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
const lifelines = new Set();
/** Ends what still runs under a lifeline (the shared server), waits for it, removes the temp files. */
async function cleanUp() {
  const ended = [...lifelines].map((l) => new Promise((r) => l.once("exit", r)));
  for (const l of lifelines) l.stdin.destroy();
  await Promise.all(ended);
  if (process.env.NBAGENT_KEEP_TEST_TMP === "1") {
    rmSync(join(runTmp, "runner.pid"), { force: true }); // kept: the next run leaves it alone
    console.error(`test temp files kept in ${runTmp}`);
  } else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
}

const python = process.env.NBAGENT_TEST_PYTHON || choosePython();
const jupyter = join(runTmp, "jupyter");
const spec = join(jupyter, "path", "kernels", "python3");
mkdirSync(spec, { recursive: true });
writeFileSync(
  join(spec, "kernel.json"),
  JSON.stringify({
    argv: [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
    display_name: "Python 3 (ipykernel)",
    language: "python",
    metadata: { debugger: true },
  }),
);
const env = {
  ...process.env,
  TMPDIR: runTmp,
  NBAGENT_TEST_PYTHON: python,
  JUPYTER_PATH: join(jupyter, "path"),
  JUPYTER_DATA_DIR: join(jupyter, "data"),
  JUPYTER_CONFIG_DIR: join(jupyter, "config"),
  JUPYTER_RUNTIME_DIR: join(jupyter, "runtime"),
  IPYTHONDIR: join(jupyter, "ipython"),
};
delete env.JUPYTER_PREFER_ENV_PATH;
delete env.NBAGENT_TEST_JUPYTER_SERVER;

/** The interpreter src/kernel/interpreter.ts chooses (the product's own rule, run once). */
function choosePython() {
  const code =
    'const { findInterpreter } = await import("./src/kernel/interpreter.ts");' +
    "process.stdout.write((await findInterpreter()).path);";
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    encoding: "utf8",
  });
  if (r.status !== 0 || !r.stdout) {
    console.error(`no Python with ipykernel found for the tests:\n${r.stderr}`);
    process.exit(1);
  }
  return r.stdout.trim();
}

/** Newest modification time of anything under `dir`, in ms. */
function newest(dir) {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    t = Math.max(t, s.isDirectory() ? newest(p) : s.mtimeMs);
  }
  return t;
}

/** Builds dist/ when it is missing or older than what it is built from. */
async function ensureBuilt() {
  const bundle = join(ROOT, "dist/cli/nbagent.js");
  let built = 0;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    // not built yet
  }
  const inputs = ["package.json", "tsconfig.build.json", "scripts/bundle.mjs", "scripts/copy-assets.mjs"];
  const source = Math.max(newest("src"), ...inputs.map((f) => statSync(f).mtimeMs));
  if (built >= source) console.error("test: dist/ is up to date");
  else {
    const started = Date.now();
    console.error("test: dist/ is older than src/: npm run -s build");
    const r = spawnSync("npm", ["run", "-s", "build"], { stdio: "inherit" });
    if (r.status !== 0) {
      console.error("test: the build failed");
      await cleanUp();
      process.exit(1);
    }
    console.error(`test: built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  return bundle;
}

/** Starts `command` under a lifeline tied to this process; stdout as given. */
function underLifeline(command, args, stdout) {
  const child = spawn(process.execPath, [join(ROOT, "test/lifeline.mjs"), command, ...args], {
    stdio: ["pipe", stdout, "inherit"],
    env,
  });
  lifelines.add(child);
  child.on("exit", () => lifelines.delete(child));
  return child;
}

/** The run's jupyter_server (test/gateway/shared-server.ts): resolves with {url, token}. */
function startSharedServer() {
  const child = underLifeline(process.execPath, ["--import", "tsx", "test/gateway/shared-server.ts"], "pipe");
  return new Promise((resolveServer, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => resolveServer(JSON.parse(line)));
    child.once("exit", (code) => reject(new Error(`the test jupyter_server did not start (exit ${code})`)));
  });
}

const usesBackends = (f) => /from "\.\.\/backends\.js"/.test(readFileSync(f, "utf8"));

// Ctrl-C reaches the lifelines through the terminal; they end their groups, then this cleans up
// (and starts no further tier).
let interrupted = false;
process.on("SIGINT", () => {
  interrupted = true;
});
process.on("SIGTERM", async () => {
  await cleanUp();
  process.exit(143);
});

// dist/ only for the files that run the CLI or read dist/ (scripts/dist-users.mjs)
const { distUsers } = await import("./dist-users.mjs"); // loads typescript: not for --list
const distNeeds = [...distUsers(files)].filter(([, why]) => why !== undefined);
if (distNeeds.length > 0) {
  const [file, why] = distNeeds[0];
  const others = distNeeds.length > 1 ? ` (and ${distNeeds.length - 1} more of the ${files.length})` : "";
  console.error(`test: dist/ needed by ${file}${others}: it uses ${why}`);
  env.NBAGENT_TEST_CLI = await ensureBuilt();
} else
  console.error(
    `test: dist/ not built: none of the ${files.length} file(s) runs the CLI (test/cli.ts) or reads dist/`,
  );
if (files.some((f) => tierOf.get(f) !== "unit" && usesBackends(f))) {
  try {
    const server = await startSharedServer();
    const file = join(runTmp, "jupyter", "server.json");
    writeFileSync(file, JSON.stringify({ url: server.url, token: server.token }), { mode: 0o600 });
    env.NBAGENT_TEST_JUPYTER_SERVER = file;
  } catch (err) {
    console.error(`test: ${err.message}`);
    await cleanUp();
    process.exit(1);
  }
}

// ---- run the tiers ----------------------------------------------------------------------------
const times = [];
let failed = false;
for (const { tier, files: tierFiles } of byTier) {
  if (interrupted) break;
  const started = Date.now();
  console.error(`test: ${tier} tier, ${tierFiles.length} file(s)`);
  const child = underLifeline(
    process.execPath,
    [
      "--import",
      "tsx",
      "--test",
      `--test-concurrency=${concurrency}`,
      `--test-timeout=${process.env.NBAGENT_TEST_TIMEOUT_MS ?? TIER_TIMEOUT_MS[tier]}`,
      ...tierFiles,
    ],
    "inherit",
  );
  const code = await new Promise((r) => child.on("exit", (c) => r(c ?? 1)));
  times.push(`${tier} ${((Date.now() - started) / 1000).toFixed(1)} s${code === 0 ? "" : " (failed)"}`);
  if (code !== 0) failed = true;
}
console.error(`test: ${times.join(", ")}`);
await cleanUp();
process.exit(failed || interrupted ? 1 : 0);
