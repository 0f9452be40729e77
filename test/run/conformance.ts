/**
 * The conformance check both conformance test files share: run the same notebooks with nbclient
 * (the reference, allow_errors on) and with `nbagent run --allow-errors`, concurrently, then compare
 * each pair in the normal form nbclient's own test-suite uses — outputs and execution counts, cell by
 * cell — and check every file we wrote validates and keeps the cells it did not run byte-identical.
 */
import assert from "node:assert/strict";
import { mkdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { type Json, NBCLIENT_RUN, nbagent, normalized, python, rawCells, validate } from "./helpers.js";

export interface ConformanceRun {
  reference: string;
  ours: string;
  stderr: string;
  code: number | null;
}

/**
 * The reference run, repeated (up to 3 times) when the reference itself fails in ways that are not
 * what is tested:
 * - jupyter_client picks free ports and releases them before the kernel binds them, and does not
 *   retry when another process takes one first: ipykernel says "Address already in use"; IRkernel
 *   warns "zmq.bind fails" and never answers, and nbclient gives up with "Kernel didn't respond"
 *   (both seen in loaded runs);
 * - nbclient waits forever (no timeout) for a reply that does not come: seen once in a CI-like run,
 *   on "Empty Cell.ipynb" with its kernel idle; the run is killed after its time and repeated.
 */
async function runReference(outdir: string, inputs: string[], options: RunOptions): Promise<void> {
  const kernel = options.kernel ? ["--kernel", options.kernel] : [];
  for (let attempt = 1; ; attempt++) {
    try {
      await python([NBCLIENT_RUN, ...kernel, "-o", outdir, ...inputs], undefined, 180_000, options.env);
      return;
    } catch (err) {
      const e = err as Error & { killed?: boolean };
      const flake = e.killed === true || /Address already in use|zmq\.bind fails/.test(String(e.message));
      if (attempt >= 3 || !flake) throw err;
    }
  }
}

export interface RunOptions {
  /** Environment for both runs (e.g. JUPYTER_PATH with the test's pinned kernelspecs). */
  env?: Record<string, string>;
  /** The kernelspec nbclient runs every input with (nbagent run reads each notebook's own). */
  kernel?: string;
}

/** Runs both executors on `inputs` into dir/nbclient and dir/nbagent. */
export async function runBoth(
  dir: string,
  inputs: string[],
  options: RunOptions = {},
): Promise<ConformanceRun> {
  const reference = join(dir, "nbclient");
  const ours = join(dir, "nbagent");
  await mkdir(reference);
  await mkdir(ours);
  // nbclient runs notebooks one after another; two reference processes halve its wall time.
  const half = Math.ceil(inputs.length / 2);
  const [, , r] = await Promise.all([
    runReference(reference, inputs.slice(0, half), options),
    inputs.length > half ? runReference(reference, inputs.slice(half), options) : undefined,
    nbagent(["run", "--allow-errors", "--quiet", "-o", ours, ...inputs], { env: options.env }),
  ]);
  return { reference, ours, stderr: r.stderr, code: r.code };
}

function cellLabel(name: string, i: number, cell: Json): string {
  const src = String(cell?.source ?? "")
    .split("\n")[0]
    .slice(0, 60);
  return `${name} cell ${i} (${JSON.stringify(src)})`;
}

/** Asserts that our executed copy of `input` equals nbclient's, and that the file is sound. */
export async function assertConforms(run: ConformanceRun, input: string): Promise<void> {
  const name = basename(input);
  const oursPath = join(run.ours, name);
  const [expected, actual] = await Promise.all([normalized(join(run.reference, name)), normalized(oursPath)]);
  assert.equal(actual.cells.length, expected.cells.length, `${name}: cell count`);
  for (let i = 0; i < expected.cells.length; i++) {
    assert.deepEqual(actual.cells[i], expected.cells[i], cellLabel(name, i, expected.cells[i]));
  }
  // Both record the kernel's language_info, even when no cell ran (nothing else changed the file).
  assert.deepEqual(actual.language_info, expected.language_info, `${name}: metadata.language_info`);
  assert.equal(await validate(oursPath), "ok", `${name}: nbformat.validate`);

  // Markdown and raw cells were not touched by the run: byte-identical to the input file's text.
  const before = await readFile(input, "utf8");
  const after = await readFile(oursPath, "utf8");
  const inCells = rawCells(before);
  const outCells = rawCells(after);
  assert.equal(outCells.length, inCells.length, `${name}: raw cell blocks`);
  const nb = JSON.parse(before);
  nb.cells.forEach((cell: Json, i: number) => {
    if (cell.cell_type !== "code") assert.equal(outCells[i], inCells[i], `${name} cell ${i} bytes`);
  });
}
