/**
 * `nbagent batch [--cwd DIR]`: many tool calls in one process, so they share kernels (a notebook's
 * kernel state, python sessions). Reads one JSON call per line on stdin —
 * `{"tool":"notebook","params":{…}}` — and prints one result per line, in the `call --json` shape.
 * A line that is not a valid call gets `{"error":"…"}` and the batch goes on. Exit 0 when every
 * call succeeded, 1 when any returned an error result, 2 when a line could not be parsed.
 */

import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { createToolbox } from "../tools/index.js";
import type { Command } from "./commands.js";
import { resultJson } from "./output.js";
import { withInterruptSignal } from "./signals.js";

export const batchCommand: Command = {
  summary: 'run JSON-lines tool calls from stdin in one process (shared kernels): {"tool":…,"params":{…}}',
  async run(args) {
    let cwd: string;
    try {
      const { values } = parseArgs({ args, options: { cwd: { type: "string" } } });
      cwd = resolve(values.cwd ?? process.cwd());
    } catch (err) {
      process.stderr.write(`nbagent batch: ${(err as Error).message}\n`);
      return 2;
    }
    const toolbox = createToolbox({ cwd });
    let worst = 0;
    try {
      await withInterruptSignal(async (signal) => {
        const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
        for await (const line of lines) {
          if (!line.trim()) continue;
          if (signal.aborted) break;
          let call: { tool?: unknown; params?: unknown };
          try {
            call = JSON.parse(line);
          } catch (err) {
            process.stdout.write(`${JSON.stringify({ error: `not JSON: ${(err as Error).message}` })}\n`);
            worst = 2;
            continue;
          }
          const tool = toolbox.tools.find((t) => t.name === call?.tool);
          if (
            !tool ||
            typeof call.params !== "object" ||
            call.params === null ||
            Array.isArray(call.params)
          ) {
            const names = toolbox.tools.map((t) => t.name).join(", ");
            process.stdout.write(
              `${JSON.stringify({ error: `each line needs {"tool": one of ${names}, "params": {…}}` })}\n`,
            );
            worst = 2;
            continue;
          }
          const result = await tool.execute(`batch-${process.pid}`, call.params, signal);
          process.stdout.write(`${resultJson(result)}\n`);
          if (result.isError) worst = Math.max(worst, 1);
        }
      });
    } finally {
      await toolbox.dispose();
    }
    return worst;
  },
};
