/**
 * Child process for file-safety tests: one notebook tool call in a real process (for a call as
 * another user, or one whose process must still exit on SIGTERM). Prints the result as one JSON
 * line. With "stay" it then waits, exiting on SIGTERM the way the CLI does (process.exit in the
 * handler, which waits for the file-system threads: a thread blocked on a FIFO would hang it).
 * argv: cwd paramsJson [stay]
 */
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";

const [cwd, params, stay] = process.argv.slice(2);
process.on("SIGTERM", () => process.exit(143));
const tool = createNotebookTool({ cwd });
const r = await tool.execute("child", JSON.parse(params));
const first = r.content[0];
process.stdout.write(
  `${JSON.stringify({ isError: r.isError === true, text: first?.type === "text" ? first.text : "" })}\n`,
);
if (stay === "stay") setInterval(() => {}, 1 << 30);
