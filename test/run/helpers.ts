/**
 * Shared helpers for notebook-run tests: the real CLI in a child process (test/cli.ts: the fresh bundle,
 * or the source through tsx),
 * the Python oracles (nbformat.validate, nbclient, the nbclient-test-suite normalisation), and
 * process lookups by a marker environment variable unique to one test.
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before } from "node:test";
import { promisify } from "node:util";
import { createToolbox, type Toolbox } from "../../src/tools/index.js";
import { cliEntry } from "../cli.js";
import { TEST_PYTHON } from "../python.js";
import { testSettings } from "../settings.js";

export const PYTHON = TEST_PYTHON;
export const ROOT = resolve(new URL("../..", import.meta.url).pathname);
export const FIXTURES = join(ROOT, "test/fixtures");
/** The reference runner from shared/anchors beside the checkout (CI lays shared/ next to its clone). */
export const NBCLIENT_RUN =
  [
    process.env.NBAGENT_ANCHORS && join(process.env.NBAGENT_ANCHORS, "nbclient_run.py"),
    join(ROOT, "../shared/anchors/nbclient_run.py"),
    "/work/shared/anchors/nbclient_run.py",
  ].find((p): p is string => typeof p === "string" && existsSync(p)) ??
  join(ROOT, "../shared/anchors/nbclient_run.py");
const execFileP = promisify(execFile);

export async function tempDir(prefix = "nbagent-run-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  input?: string;
  env?: Record<string, string>;
  /** Variables of this process the child must not inherit (before `env` is added). */
  unset?: string[];
  /** A built bundle to run instead of the source through tsx (the CLI as installed). */
  bundle?: string;
}

/** Starts `nbagent ARGS…` (test/cli.ts, or `options.bundle`); the caller owns the child. */
export function spawnNbagent(args: string[], options: CliOptions = {}) {
  const inherited = { ...process.env };
  for (const name of options.unset ?? []) delete inherited[name];
  const entry = options.bundle ? [options.bundle] : cliEntry();
  return spawn(process.execPath, [...entry, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...inherited, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/**
 * Runs `nbagent ARGS…` to completion; `onStderr` sees stderr so far as it grows (a place to act on
 * what the command says while it runs).
 */
export function nbagent(
  args: string[],
  options: CliOptions & { onStderr?: (soFar: string) => void } = {},
): Promise<CliResult> {
  const child = spawnNbagent(args, options);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
    options.onStderr?.(stderr);
  });
  child.stdin.end(options.input ?? "");
  return new Promise((resolvePromise, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are arbitrary JSON
export type Json = any;

/** `nbagent batch`: one JSON call per line, one result per line (calls share kernels). */
export async function batch(
  cwd: string,
  calls: { tool: string; params: Record<string, unknown> }[],
  env?: Record<string, string>,
): Promise<{ code: number | null; results: Json[]; stderr: string }> {
  const input = calls.map((c) => JSON.stringify(c)).join("\n");
  const r = await nbagent(["batch", "--cwd", cwd], { input: `${input}\n`, env });
  const results = r.stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  return { code: r.code, results, stderr: r.stderr };
}

/** All text parts of a tool result joined. */
export function resultText(result: Json): string {
  return (result.content as { type: string; text?: string }[])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

/**
 * Runs a Python script to completion. Past its time it is killed with SIGKILL: nbclient catches
 * SIGTERM (seen: a hung nbclient_run.py survived the SIGTERM of a timeout and held a test for
 * good); its kernels exit on their own when their parent is gone (ipykernel's parent poller).
 */
export async function python(
  args: string[],
  cwd?: string,
  timeoutMs = 120_000,
  env?: Record<string, string>,
): Promise<string> {
  const { stdout } = await execFileP(PYTHON, args, {
    cwd,
    ...(env ? { env: { ...process.env, ...env } } : {}),
    maxBuffer: 1 << 26,
    timeout: timeoutMs,
    killSignal: "SIGKILL",
  });
  return stdout;
}

/** nbformat.validate on a file (as_version 4); resolves with "ok" or the validation message. */
export async function validate(path: string): Promise<string> {
  const code =
    "import sys, nbformat\n" +
    "try:\n" +
    "    nbformat.validate(nbformat.read(sys.argv[1], as_version=4))\n" +
    "    print('ok')\n" +
    "except Exception as e:\n" +
    "    print(type(e).__name__, str(e)[:500])\n";
  return (await python(["-c", code, path])).trim();
}

/** The nbclient-test-suite normal form of a notebook (see test/fixtures/normalize_nb.py). */
export async function normalized(path: string): Promise<Json> {
  return JSON.parse(await python([join(FIXTURES, "normalize_nb.py"), path]));
}

/** Writes the run corpus (test/fixtures/make_run_corpus.py) into dir; returns the notebook names. */
export async function makeCorpus(dir: string): Promise<string[]> {
  await python([join(FIXTURES, "make_run_corpus.py"), dir]);
  return (await readdir(dir)).filter((n) => n.endsWith(".ipynb")).sort();
}

/** A notebook written by nbformat itself; cells as [type, source, tags?]. */
export async function writeNb(
  path: string,
  cells: (["code" | "markdown" | "raw", string] | ["code", string, string[]])[],
  kernelspec: { name: string; display_name: string; language: string } = {
    name: "python3",
    display_name: "Python 3",
    language: "python",
  },
): Promise<string> {
  const code =
    "import json, sys, nbformat\n" +
    "from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_raw_cell\n" +
    "spec = json.loads(sys.argv[2])\n" +
    "nb = new_notebook()\n" +
    "nb.metadata['kernelspec'] = json.loads(sys.argv[3])\n" +
    "make = {'code': new_code_cell, 'markdown': new_markdown_cell, 'raw': new_raw_cell}\n" +
    "for i, c in enumerate(spec):\n" +
    "    cell = make[c[0]](c[1])\n" +
    "    cell['id'] = f'c{i}'\n" +
    "    if len(c) > 2: cell.metadata['tags'] = c[2]\n" +
    "    nb.cells.append(cell)\n" +
    "nbformat.write(nb, sys.argv[1])\n";
  await python(["-c", code, path, JSON.stringify(cells), JSON.stringify(kernelspec)]);
  return path;
}

// biome-ignore lint/suspicious/noExplicitAny: tests poke into notebook JSON
export async function readNb(path: string): Promise<any> {
  return JSON.parse(await readFile(path, "utf8"));
}

/**
 * The raw text of each cell as it appears in the file (nbformat.write's layout: indent 1, each cell
 * an object at depth 2 of "cells"). Used to check that cells a run did not execute stay byte-identical.
 */
export function rawCells(fileText: string): string[] {
  const lines = fileText.split("\n");
  const start = lines.indexOf(' "cells": [');
  if (start < 0) throw new Error("not an nbformat-written notebook");
  const cells: string[] = [];
  let current: string[] | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === "  {") current = [line];
    else if (current) {
      current.push(line);
      if (line === "  }" || line === "  },") {
        cells.push(current.join("\n").replace(/,$/, ""));
        current = undefined;
      }
    } else if (line === " ]" || line === " ],") break;
  }
  return cells;
}

/** A marker for the environment of processes one test starts (kernels inherit it). */
export function marker(): { name: string; value: string } {
  return { name: "NBAGENT_TEST_MARKER", value: randomUUID() };
}

/** Pids of live processes whose environment holds NAME=VALUE (Linux /proc). */
export async function pidsWithEnv(name: string, value: string): Promise<number[]> {
  const needle = `${name}=${value}`;
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = await readFile(`/proc/${entry}/environ`, "latin1");
      if (!env.split("\0").includes(needle)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, "latin1");
      if (/^\d+ \(.*\) Z /.test(stat)) continue; // a zombie is already dead
      pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/**
 * Python code that makes the kernel keep `probe` open (and print "held"). A kernel is pid 2 of its
 * own PID namespace (docs/isolation.md), so its os.getpid() says nothing on the host: the host finds
 * the kernel's process by the file it holds (kernelHostPid).
 */
export function holdProbeCode(probe: string): string {
  return `_nbagent_probe = open(${JSON.stringify(probe)}, "w")\nprint("held")`;
}

/** The live processes holding `path` open (see holdProbeCode). */
export async function pidsHolding(path: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      for (const fd of await readdir(`/proc/${entry}/fd`)) {
        if ((await readlink(`/proc/${entry}/fd/${fd}`).catch(() => "")) !== path) continue;
        const stat = await readFile(`/proc/${entry}/stat`, "latin1");
        if (!/^\d+ \(.*\) Z /.test(stat)) pids.push(Number(entry));
        break;
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** The host pid of the one process holding `path` open (a kernel that ran holdProbeCode). */
export async function kernelHostPid(path: string): Promise<number> {
  const pids = await pidsHolding(path);
  if (pids.length !== 1)
    throw new Error(`expected one process holding ${path}, found ${pids.join(", ") || "none"}`);
  return pids[0];
}

/** Polls `check` until it returns a truthy value or the deadline passes (then throws with `what`). */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Each cell's outputs as short texts: stream text, or `!<ename>` for an error. */
export const outputTexts = (nb: Json) =>
  nb.cells.map((c: Json) =>
    (c.outputs ?? []).map((o: Json) =>
      o.output_type === "error" ? `!${o.ename}` : [o.text].flat().join(""),
    ),
  );

/**
 * A temp root made before a describe's tests and removed after them, and `dir()` giving each test a
 * fresh folder in it.
 */
export function perTestDirs(): () => Promise<string> {
  let root: string;
  let n = 0;
  before(async () => {
    root = await tempDir();
  });
  after(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });
  return async () => {
    const d = join(root, String(n++));
    await mkdir(d);
    return d;
  };
}

/**
 * A toolbox as a one-shot host makes it (no background runs), its state under `cwd`, and a caller
 * for one of its tools by name; dispose the toolbox when done.
 */
export function oneShotToolbox(cwd: string): {
  box: Toolbox;
  tool: (name: string) => (params: Json) => Promise<Json>;
} {
  const box = createToolbox({
    settings: testSettings(),
    cwd,
    runtime: { stateRoot: join(cwd, ".state") },
    background: false,
  });
  const tool = (name: string) => (params: Json) =>
    box.tools.find((t) => t.name === name)!.execute("t", params) as Promise<Json>;
  return { box, tool };
}
