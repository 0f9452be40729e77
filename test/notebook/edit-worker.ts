/**
 * Child process for the concurrency test: prints "ready", waits for "go" on stdin, then inserts
 * `count` cells tagged with its name into the notebook, and prints one JSON line per attempt.
 * argv: notebookPath name count
 */
import { createInterface } from "node:readline";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";

const [path, name, count] = process.argv.slice(2);
const tool = createNotebookTool({ cwd: "/" });
const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
lines.once("line", async () => {
  for (let i = 0; i < Number(count); i++) {
    const content = `${name}-${i}`;
    const r = await tool.execute("w", { action: "insert", notebook_path: path, cell_index: 0, content });
    const first = r.content[0];
    process.stdout.write(
      `${JSON.stringify({ content, ok: !r.isError, text: first?.type === "text" ? first.text : "" })}\n`,
    );
  }
  lines.close();
});
