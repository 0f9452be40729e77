/**
 * `nbagent call <tool> <params> [--cwd DIR] [--json]`: runs one tool call the way an agent would.
 * Exit codes: 0 success, 1 the tool returned an error result, 2 usage (unknown tool, bad params).
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createToolbox } from "../tools/index.js";
import type { Command } from "./commands.js";
import { resultJson, resultText } from "./output.js";
import { readParams, UsageError } from "./params.js";
import { withInterruptSignal } from "./signals.js";

export const callCommand: Command = {
  summary: "call a tool: nbagent call <notebook|python> <json|@file|-> [--cwd DIR] [--json]",
  async run(args) {
    let parsed: ReturnType<typeof parse>;
    try {
      parsed = parse(args);
    } catch (err) {
      process.stderr.write(`nbagent call: ${(err as Error).message}\n`);
      return 2;
    }
    const { toolName, params, cwd, json } = parsed;
    const toolbox = createToolbox({ cwd });
    try {
      const tool = toolbox.tools.find((t) => t.name === toolName);
      if (!tool) {
        const names = toolbox.tools.map((t) => t.name).join(", ");
        process.stderr.write(`nbagent call: unknown tool '${toolName}' (tools: ${names})\n`);
        return 2;
      }
      const result = await withInterruptSignal((signal) =>
        tool.execute(`cli-${process.pid}`, params, signal),
      );
      process.stdout.write(`${json ? resultJson(result) : resultText(result)}\n`);
      return result.isError ? 1 : 0;
    } finally {
      await toolbox.dispose();
    }
  },
};

function parse(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { cwd: { type: "string" }, json: { type: "boolean" } },
  });
  const [toolName, paramsArg, ...extra] = positionals;
  if (!toolName) throw new UsageError("missing <tool>");
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const params = readParams(paramsArg);
  return { toolName, params, cwd: resolve(values.cwd ?? process.cwd()), json: values.json === true };
}
