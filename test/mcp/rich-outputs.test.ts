/**
 * Rich outputs through `nbagent mcp` over stdio with the official SDK client (docs/output.md): the
 * content array a client gets — the text, then the images in the order the text labels them — for
 * two plots, an HTML with an embedded PNG (sent as an image, no base64 in the text), a Styler and
 * LaTeX.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { imageSize } from "../../src/tools/notebook/outputs.js";
import { type StdioServer, stdioServer, tempDir } from "./helpers.js";

let server: StdioServer;

before(async () => {
  server = await stdioServer(["--cwd", await tempDir("nbagent-mcp-rich-")]);
});

after(async () => {
  await server?.client.close();
});

const PLOT =
  "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\n";

test("text and images come in order, each image labelled at its place in the text", async () => {
  const r = (await server.client.callTool(
    {
      name: "python",
      arguments: {
        cells: [
          { code: `${PLOT}plt.figure(figsize=(5, 3.5)); plt.plot([1, 3, 2]); plt.show()` },
          {
            code: "import base64, io\nfrom PIL import Image\nfrom IPython.display import HTML, Math, display\n_b = io.BytesIO(); Image.new('RGB', (40, 30)).save(_b, 'PNG')\ndisplay(HTML('<p>inline:</p><img src=\"data:image/png;base64,' + base64.b64encode(_b.getvalue()).decode() + '\">'))\ndisplay(Math(r'\\int_0^1 x\\,dx'))",
          },
          { code: "import pandas as pd\npd.DataFrame({'a': [1, 2]}).style" },
        ],
        timeout: 100,
      },
    },
    undefined,
    { timeout: 120_000 },
  )) as CallToolResult;
  const content = r.content as { type: string; text?: string; data?: string; mimeType?: string }[];
  assert.equal(r.isError, undefined, content[0]?.text);
  assert.deepEqual(
    content.map((c) => c.type),
    ["text", "image", "image"],
  );
  const [plot, inline] = content.slice(1).map((c) => imageSize(c.mimeType!, c.data!)!);
  assert.deepEqual(inline, { width: 40, height: 30 });
  const text = content[0].text!;
  assert.equal(
    text,
    [
      "[1/3]",
      `[image 1 · cell 1 · ${plot.width}×${plot.height}]`,
      "[2/3]",
      "inline:",
      "",
      "[image 2 · cell 2 · 40×30]",
      "$\\displaystyle \\int_0^1 x\\,dx$",
      "[3/3]",
      "|  | a |", // the blank corner (&nbsp;) is an empty cell
      "| --- | --- |",
      "| 0 | 1 |",
      "| 1 | 2 |",
    ].join("\n"),
  );
  assert.doesNotMatch(text, /base64|iVBOR/);
});
