/** Shared helpers for notebook tests: temp dirs, notebook builders, and the nbformat oracle. */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { serializeNotebook } from "../../src/notebook/index.js";
import { createNotebookTool, type NotebookDetails } from "../../src/tools/notebook/notebook.js";
import type { ToolResult } from "../../src/tools/types.js";
import { TEST_PYTHON } from "../python.js";

export const PYTHON = TEST_PYTHON;
const HERE = new URL(".", import.meta.url).pathname;
const run = promisify(execFile);

export async function tempDir(prefix = "nbagent-nb-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export interface CellSpec {
  type?: "code" | "markdown" | "raw";
  source: string;
  outputs?: unknown[];
  execution_count?: number | null;
  id?: string;
}

/** A notebook file in nbformat.write's layout (our serialiser is checked against nbformat elsewhere). */
export async function writeNotebook(path: string, cells: CellSpec[], minor = 5): Promise<string> {
  const nb = {
    cells: cells.map((c, i) => {
      const type = c.type ?? "code";
      const cell: Record<string, unknown> = { cell_type: type, metadata: {}, source: splitSource(c.source) };
      if (minor >= 5) cell.id = c.id ?? `cell-${i}`;
      if (type === "code") {
        cell.execution_count = c.execution_count ?? null;
        cell.outputs = c.outputs ?? [];
      }
      return cell;
    }),
    metadata: { kernelspec: { display_name: "Python 3", language: "python", name: "python3" } },
    nbformat: 4,
    nbformat_minor: minor,
  };
  await writeFile(path, serializeNotebook(nb));
  return path;
}

function splitSource(s: string): string[] {
  return s.split(/(?<=\n)/).filter((l) => l !== "");
}

// biome-ignore lint/suspicious/noExplicitAny: tests poke into arbitrary notebook JSON
export async function readJson(path: string): Promise<any> {
  return JSON.parse(await readFile(path, "utf8"));
}

export function text(result: ToolResult<unknown>): string {
  const first = result.content[0];
  return first && first.type === "text" ? first.text : "";
}

export async function call(
  cwd: string,
  params: Record<string, unknown>,
): Promise<ToolResult<NotebookDetails>> {
  return createNotebookTool({ cwd }).execute("test", params as never);
}

/** Runs make_corpus.py into `dir`; returns the file names. */
export async function makeCorpus(dir: string, randomCount = 20): Promise<string[]> {
  const { stdout } = await run(PYTHON, [join(HERE, "make_corpus.py"), dir, String(randomCount)], {
    maxBuffer: 1 << 24,
  });
  return JSON.parse(stdout) as string[];
}

export interface OracleVerdict {
  valid: boolean;
  error: string | null;
  canonical: boolean;
}

/** A long-lived `oracle.py --serve` process: nbformat.validate (+ canonical check) per path. */
export class Oracle {
  private proc: ChildProcessWithoutNullStreams;
  private waiting: ((line: string) => void)[] = [];

  constructor() {
    this.proc = spawn(PYTHON, ["-u", join(HERE, "oracle.py"), "--serve"]);
    createInterface({ input: this.proc.stdout }).on("line", (line) => this.waiting.shift()?.(line));
    this.proc.stderr.resume();
  }

  check(path: string): Promise<OracleVerdict> {
    return new Promise((resolve, reject) => {
      this.waiting.push((line) => {
        try {
          resolve(JSON.parse(line) as OracleVerdict);
        } catch (e) {
          reject(e);
        }
      });
      this.proc.stdin.write(`${path}\n`);
    });
  }

  close(): void {
    this.proc.stdin.end();
  }
}
