import { parseArgs } from "node:util";
import type { Command } from "./commands.js";
import { formatDoctor, runDoctor } from "./doctor.js";

export const doctorCommand: Command = {
  summary: "report the Python interpreter nbagent will use and what is missing, with fixes",
  async run(args) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean" }, cwd: { type: "string" } } });
    const report = await runDoctor(values.cwd ?? process.cwd());
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatDoctor(report)}\n`);
    return report.ok ? 0 : 1;
  },
};
