/**
 * Kernelspecs the tests pin: a JUPYTER_PATH of the test's own with kernels under names no machine
 * has ("nbagent-test-…"), found first, so a machine's other kernels change nothing:
 * - nbagent-test-log: a real kernel of another language ("logtext", test/fixtures/kernels/logkernel.py)
 *   that logs every code it is sent;
 * - nbagent-test-r: IRkernel; nbagent-test-octave: octave_kernel — installed by scripts/setup.sh
 *   from Debian (r-cran-irkernel; octave, python3-octave-kernel). Without them a test that needs one
 *   is skipped, except under CI, which installs them, so a missing install fails there.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { TEST_PYTHON } from "./python.js";

const LOGKERNEL = resolve(new URL("./fixtures/kernels/logkernel.py", import.meta.url).pathname);

export interface PinnedKernels {
  /** The environment a process needs to see them (JUPYTER_PATH). */
  env: Record<string, string>;
  /** Where nbagent-test-log writes what it was sent. */
  logFile: string;
}

export async function pinnedKernels(dir: string): Promise<PinnedKernels> {
  const root = join(dir, "jupyter");
  const logFile = join(dir, "logkernel.log");
  const specs: Record<string, Record<string, unknown>> = {
    "nbagent-test-log": {
      argv: [TEST_PYTHON, LOGKERNEL, "-f", "{connection_file}"],
      display_name: "Log (nbagent tests)",
      language: "logtext",
      env: { LOGKERNEL_FILE: logFile },
    },
    "nbagent-test-r": {
      argv: ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
      display_name: "R (nbagent tests)",
      language: "R",
    },
    "nbagent-test-octave": {
      argv: [TEST_PYTHON, "-m", "octave_kernel", "-f", "{connection_file}"],
      display_name: "Octave (nbagent tests)",
      language: "octave",
    },
  };
  for (const [name, spec] of Object.entries(specs)) {
    await mkdir(join(root, "kernels", name), { recursive: true });
    await writeFile(join(root, "kernels", name, "kernel.json"), JSON.stringify(spec));
  }
  return { env: { JUPYTER_PATH: root }, logFile };
}

/** The code nbagent-test-log received, in order. */
export async function loggedCode(kernels: PinnedKernels): Promise<string[]> {
  const text = await readFile(kernels.logFile, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as string);
}

function answers(command: string, args: string[], expected: string): boolean {
  try {
    return (
      execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() ===
      expected
    );
  } catch {
    return false;
  }
}

/** A `skip` value for node:test: false when the kernel is here (always false under CI). */
function need(present: boolean, what: string): string | false {
  if (present || process.env.CI) return false;
  return `${what} is not installed (bash scripts/setup.sh installs it)`;
}

export const SKIP_R = need(
  answers("R", ["--slave", "-e", "cat(requireNamespace('IRkernel', quietly = TRUE))"], "TRUE"),
  "IRkernel (r-cran-irkernel)",
);
export const SKIP_OCTAVE = need(
  answers("octave", ["--no-gui", "--quiet", "--eval", "disp(1)"], "1") &&
    answers(TEST_PYTHON, ["-c", "import octave_kernel; print('ok')"], "ok"),
  "Octave's kernel (octave, python3-octave-kernel)",
);
