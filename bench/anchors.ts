/** Runs the reference clients in ../shared/anchors with the Python that has ipykernel. */
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { findInterpreter } from "../src/kernel/interpreter.js";

const run = promisify(execFile);

export function anchorsDir(): string {
  for (const dir of [process.env.NBAGENT_ANCHORS, resolve("../shared/anchors"), "/work/shared/anchors"]) {
    if (dir && existsSync(resolve(dir, "jupyter_client_bench.py"))) return resolve(dir);
  }
  throw new Error(
    "reference clients not found: set NBAGENT_ANCHORS to the folder holding jupyter_client_bench.py",
  );
}

export interface JupyterClientFigures {
  kernel_start_first_result_ms: number;
  exec_roundtrip_median_ms: number;
  exec_roundtrip_p90_ms: number;
  stream_lines: number;
  stream_chars: number;
  stream_ms: number;
}

export async function jupyterClientBench(args: string[] = []): Promise<JupyterClientFigures> {
  const py = await findInterpreter();
  const { stdout } = await run(py.path, [resolve(anchorsDir(), "jupyter_client_bench.py"), ...args], {
    maxBuffer: 1 << 24,
    timeout: 900_000,
  });
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

export async function nbclientRun(
  args: string[],
): Promise<{ seconds: Record<string, number>; total_seconds: number }> {
  const py = await findInterpreter();
  const { stdout } = await run(py.path, [resolve(anchorsDir(), "nbclient_run.py"), ...args], {
    maxBuffer: 1 << 24,
    timeout: 900_000,
  });
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

export interface DrainFigures {
  max_rss_bytes: number;
  received_bytes: number;
  seconds: number;
}

/**
 * jupyter_client running one cell that prints `bytes` and draining IOPub, keeping the text as
 * nbclient keeps a cell's outputs (bench/reference/print_drain.py): the memory a Python client pays.
 */
export async function jupyterClientDrain(bytes: number): Promise<DrainFigures> {
  const py = await findInterpreter();
  const script = resolve(import.meta.dirname, "reference", "print_drain.py");
  const { stdout } = await run(py.path, [script, String(bytes), "keep"], {
    maxBuffer: 1 << 24,
    timeout: 900_000,
    env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: "1" },
  });
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

/**
 * bench/reference/execute_cells.py, started once (its kernel too): `cells(n)` has it run n trivial
 * cells one after another and gives the milliseconds, so its rounds can alternate with ours.
 */
export async function jupyterClientCells(): Promise<{
  cells(n: number): Promise<number>;
  close(): Promise<void>;
}> {
  const py = await findInterpreter();
  const script = resolve(import.meta.dirname, "reference", "execute_cells.py");
  const child = spawn(py.path, [script], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: "1" },
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, number>> => {
    const line = await lines.next();
    if (line.done) throw new Error("execute_cells.py ended early");
    return JSON.parse(line.value);
  };
  await next(); // ready: kernel started, warmed up
  return {
    async cells(n) {
      child.stdin!.write(`run ${n}\n`);
      return (await next()).ms;
    },
    close: () =>
      new Promise((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.stdin!.end();
      }),
  };
}
