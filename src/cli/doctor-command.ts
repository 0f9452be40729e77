import { parseArgs } from "node:util";
import type { Command } from "./command.js";
import { formatDoctor, runDoctor } from "./doctor.js";

const HELP = `nbagent doctor — report the Python interpreter nbagent will use and what is missing, with fixes

usage: nbagent doctor [--json] [--cwd DIR]

Says which interpreter runs the kernels (NBAGENT_PYTHON, an active VIRTUAL_ENV, ./.venv, python3 on
PATH, /usr/bin/python3: the first that can import ipykernel), whether ipykernel, nbformat and
jupyter_server import, and the exact command that installs each missing one. Also which isolation
kernels get here, tried for real: a PID namespace of their own (no host process visible) or none and
why, and whether --sandbox (bubblewrap) is available (docs/isolation.md). Then every kernelspec it
finds (python3 for that interpreter, and those in the Jupyter kernel directories: R, Octave …), each
started for real: its language and how long the start took, or why it does not start (docs/kernels.md).

options:
  --json      the report as one JSON object
  --cwd DIR   look for ./.venv here (default: the current directory)

exit: 0 everything required is there; 1 something required is missing; 2 usage.

example:
  nbagent doctor
`;

export const doctorCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let values: { json?: boolean; cwd?: string };
    try {
      ({ values } = parseArgs({ args, options: { json: { type: "boolean" }, cwd: { type: "string" } } }));
    } catch (err) {
      process.stderr.write(
        `nbagent doctor: ${(err as Error).message}\nusage: nbagent doctor [--json] [--cwd DIR]\n`,
      );
      return 2;
    }
    const report = await runDoctor(values.cwd ?? process.cwd(), settings);
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatDoctor(report)}\n`);
    return report.ok ? 0 : 1;
  },
};
