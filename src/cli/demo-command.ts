/**
 * `nbagent demo [DIR]`: the whole loop on the embedded default, through the same tool objects an agent
 * uses — copy the sample notebook into DIR (default ./nbagent-demo), edit it, insert cells, run it in
 * its own kernel (outputs, a plot among them, saved into the file), and inspect its kernel's state.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type AnyTool, createToolbox } from "../tools/index.js";
import { notebookDescriptor } from "../tools/notebook/descriptor.js";
import { pythonDescriptor } from "../tools/python/python.js";
import type { ToolResult } from "../tools/types.js";
import type { Command } from "./command.js";
import { resultText } from "./output.js";

const SAMPLE = fileURLToPath(new URL("../../examples/demo.ipynb", import.meta.url));

const HELP = `nbagent demo — edit and run a sample notebook in its kernel, through the tools an agent uses

usage: nbagent demo [DIR]

Copies examples/demo.ipynb into DIR (default ./nbagent-demo, created if missing; a demo.ipynb there
is replaced), then reads it, edits a cell, inserts one, runs every cell in the notebook's own kernel
(outputs, a plot among them, are saved into the file) and inspects that kernel's state with the
python tool. Each step prints the call and the result the model would read.

arguments:
  DIR   where the demo notebook goes (default ./nbagent-demo)

exit: 0 every step succeeded; 1 a step failed; 2 usage.

example:
  nbagent demo /tmp/nbagent-demo
`;

export const demoCommand: Command = {
  help: HELP,
  async run(args, settings) {
    let positionals: string[];
    try {
      ({ positionals } = parseArgs({ args, allowPositionals: true }));
      if (positionals.length > 1) throw new Error(`unexpected arguments: ${positionals.slice(1).join(" ")}`);
    } catch (err) {
      process.stderr.write(`nbagent demo: ${(err as Error).message}\nusage: nbagent demo [DIR]\n`);
      return 2;
    }
    const dir = resolve(positionals[0] ?? "nbagent-demo");
    mkdirSync(dir, { recursive: true });
    copyFileSync(SAMPLE, join(dir, "demo.ipynb"));
    const toolbox = createToolbox({ cwd: dir, settings, background: false });
    const notebook = toolbox.get(notebookDescriptor);
    const python = toolbox.get(pythonDescriptor);
    const step = async (title: string, tool: AnyTool, params: object): Promise<ToolResult> => {
      process.stdout.write(`\n\x1b[1m$ ${tool.name} ${JSON.stringify(params)}\x1b[0m   # ${title}\n`);
      const result = await tool.execute("demo", params);
      process.stdout.write(`${resultText(result)}\n`);
      if (result.isError) throw new Error(`demo step failed: ${title}`);
      return result;
    };
    try {
      const nb = "demo.ipynb";
      await step("look at the notebook", notebook, { action: "read", notebook_path: nb });
      await step("change the plot's title", notebook, {
        action: "edit",
        notebook_path: nb,
        cell_index: 2,
        content:
          "%matplotlib inline\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 2.5))\nax.plot(xs, np.sin(xs), label='sin')\nax.plot(xs, np.cos(xs), label='cos')\nax.legend()\nax.set_title('sin and cos')\nplt.show()",
      });
      await step("add a summary cell at the end", notebook, {
        action: "insert",
        notebook_path: nb,
        cell_index: 4,
        content: "summary = {'points': len(xs), 'max_sin': float(np.sin(xs).max())}\nsummary",
      });
      await step("run every cell in the notebook's own kernel; outputs are saved", notebook, {
        action: "run",
        notebook_path: nb,
      });
      await step("inspect the notebook kernel's state without touching the file", python, {
        notebook_path: nb,
        cells: [{ code: "print(type(fig).__name__, summary)" }],
      });
      await step("the saved outputs, summarised", notebook, { action: "read", notebook_path: nb });
      process.stdout.write(
        `\nThe executed notebook is ${join(dir, nb)} (open it in Jupyter to see the plot).\n`,
      );
      return 0;
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      return 1;
    } finally {
      await toolbox.dispose();
    }
  },
};
