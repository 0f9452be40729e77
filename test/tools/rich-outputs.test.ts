/**
 * Rich outputs as the model reads them (docs/output.md), through the python tool on real kernels:
 * a pandas Styler as a table, LaTeX as its source, an HTML's embedded images sent as images (no
 * base64 in the text), and every image labelled at its place with its cell, its position among the
 * result's images and its size as sent.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createNotebookExecutor } from "../../src/tools/notebook/executor.js";
import { imageSize } from "../../src/tools/notebook/outputs.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import type { PythonToolDetails } from "../../src/tools/python/result.js";
import type { ToolResult } from "../../src/tools/types.js";
import { backendCases } from "../backends.js";
import { writeNb } from "../run/helpers.js";
import { pythonToolOn } from "./python-fixture.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-rich-"));
const cwd = mkdtempSync(join(root, "work-"));
after(() => rmSync(root, { recursive: true, force: true }));

type Content = ToolResult<PythonToolDetails>["content"];
const text = (r: ToolResult<PythonToolDetails>) => (r.content[0] as { text: string }).text;
/** Width × height of each image content, in order (read from the image bytes sent). */
const sentSizes = (content: Content) =>
  content
    .filter((c) => c.type === "image")
    .map((c) => {
      const { data, mimeType } = c as { data: string; mimeType: string };
      const s = imageSize(mimeType, data);
      return s ? `${s.width}×${s.height}` : "?";
    });

const PLOT =
  "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\n";
/** A base64 PNG of w × h made in the kernel. */
const pngB64 = (w: number, h: number) =>
  `import base64, io\nfrom PIL import Image\n_b = io.BytesIO(); Image.new('RGB', (${w}, ${h}), (200, 30, 30)).save(_b, 'PNG')\nb64 = base64.b64encode(_b.getvalue()).decode()\n`;

for (const backend of backendCases())
  describe(backend.name, () => {
    const py = pythonToolOn(backend, { root, cwd });

    const call = (params: unknown, t = py.tool) => t.execute("t", params as PythonParams);

    test("a pandas Styler reaches the model as its table, not as <Styler object at 0x…>", async () => {
      const r = await call({
        cells: [
          {
            code: "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3.5, 4.25]}).style.highlight_max()",
          },
        ],
      });
      assert.equal(r.isError, undefined, text(r));
      const t = text(r);
      assert.doesNotMatch(t, /Styler/);
      const lines = t.split("\n");
      assert.equal(lines.length, 6, t);
      assert.equal(lines[0], "|  | a | b |"); // the Styler's corner cell is &nbsp;: blank
      assert.equal(lines[1], "| --- | --- | --- |");
      assert.match(lines[2], /^\| 0 \| 1 \| 3\.50* \|$/);
      // highlight_max's cells: marked, and what marked them said
      assert.match(lines[3], /^\| 1 \| \*\*2\*\* \| \*\*4\.250*\*\* \|$/);
      assert.equal(lines[5], "[cells in bold are styled: background-color: yellow]");
    });

    test("Math and Latex reach the model as their LaTeX source; markdown and JSON as before", async () => {
      const r = await call({
        cells: [
          {
            code: "from IPython.display import JSON, Latex, Markdown, Math, display\ndisplay(Math(r'\\int_0^1 x\\,dx'))\ndisplay(Latex(r'$\\alpha + \\beta$'))\ndisplay(Markdown('**bold** text'))\ndisplay(JSON({'k': [1, 2]}))",
          },
        ],
      });
      assert.equal(
        text(r),
        '$\\displaystyle \\int_0^1 x\\,dx$\n$\\alpha + \\beta$\n**bold** text\n{"k":[1,2]}',
      );
    });

    test("an HTML's embedded PNG is sent as an image; its base64 is not in the text", async () => {
      const r = await call({
        cells: [
          {
            code: `${pngB64(40, 30)}from IPython.display import HTML, display\ndisplay(HTML(f'<p>Plot:</p><img alt="fig" src="data:image/png;base64,{b64}"><p>done</p>'))`,
          },
        ],
      });
      assert.equal(r.isError, undefined, text(r));
      assert.deepEqual(
        r.content.map((c) => c.type),
        ["text", "image"],
      );
      assert.equal(text(r), "Plot:\n\n[image 1 · cell 1 · 40×30]\n\ndone");
      assert.deepEqual(sentSizes(r.content), ["40×30"]);
      // markdown's data-URI images too
      const md = await call({
        cells: [
          {
            code: `${pngB64(12, 8)}from IPython.display import Markdown, display\ndisplay(Markdown(f'a ![x](data:image/png;base64,{b64}) b'))`,
          },
        ],
      });
      assert.equal(text(md), "a [image 1 · cell 1 · 12×8] b");
      assert.deepEqual(sentSizes(md.content), ["12×8"]);
    });

    test("each image is labelled at its place with its cell, its position and its size as sent", async () => {
      const r = await call({
        cells: [
          { code: `${PLOT}plt.figure(figsize=(5, 3.5)); plt.plot([1, 3, 2]); plt.show()` },
          { code: `${PLOT}print('second'); plt.figure(figsize=(3, 2)); plt.plot([2, 1]); plt.show()` },
        ],
        timeout: 60,
      });
      assert.equal(r.isError, undefined, text(r));
      assert.deepEqual(
        r.content.map((c) => c.type),
        ["text", "image", "image"],
      );
      const [one, two] = sentSizes(r.content);
      assert.notEqual(one, two);
      assert.equal(text(r), `[1/2]\n[image 1 · cell 1 · ${one}]\n[2/2]\nsecond\n[image 2 · cell 2 · ${two}]`);
      assert.deepEqual(
        r.details.images.map((i) => `${i.sentWidth}×${i.sentHeight}`),
        [one, two],
      );
    });

    test("a notebook run labels images with the notebook's cell index; progress says only the cell", async () => {
      const path = await writeNb(join(cwd, `plots-${backend.name}.ipynb`), [
        ["code", "x = 1"],
        ["code", `${PLOT}plt.figure(figsize=(2, 2)); plt.plot([1, 2]); plt.show()`],
      ]);
      const executor = createNotebookExecutor({ runtime: py.rt, updateIntervalMs: 0 });
      const progress: string[] = [];
      const r = await executor.run({
        path,
        shownPath: "plots.ipynb",
        cellIndices: [0, 1],
        params: { action: "run", notebook_path: "plots.ipynb", timeout: 60 } as never,
        onUpdate: (u) => progress.push((u.content[0] as { text: string }).text),
      });
      const t = (r.content[0] as { text: string }).text;
      const [plot] = sentSizes(r.content);
      assert.ok(t.includes(`[cell 1 (id c1)]\n[image 1 · cell 1 · ${plot}]`), t);
      assert.ok(
        progress.some((p) => p.includes("[cell 1 (id c1)]\n[image · cell 1]")),
        progress.join("\n---\n"),
      );
    });

    test("an image whose place in the output was cut is still tied to its cell, after the output", async () => {
      const small = createPythonTool({ cwd, runtime: py.rt, maxOutputBytes: 2000 });
      const r = await call(
        {
          cells: [
            {
              code: "from PIL import Image\nfrom IPython.display import display\nfor i in range(200): print('x' * 30)\ndisplay(Image.new('RGB', (5, 4)))\nfor i in range(200): print('y' * 30)",
            },
          ],
        },
        small,
      );
      assert.deepEqual(sentSizes(r.content), ["5×4"]);
      const t = text(r);
      assert.match(
        t,
        /\[cell 1: 401 lines .*\]\n\[image 1 · cell 1 · 5×4\] \(its place is in the part of cell 1's output not shown here\)$/,
      );
      assert.equal(t.split("[image 1 ").length, 2, "labelled once");
      // the artifact keeps the placeholder at the image's place
      const all = await py.rt.artifacts.read(r.details.output.artifactUri!, { offset: 200, limit: 3 });
      assert.equal(all.text, `${"x".repeat(30)}\n[image #1 · cell 1]\n${"y".repeat(30)}\n`);
    });

    test("a downscaled image is labelled with the size sent; one past the limit says it was left out", async () => {
      const capped = createPythonTool({ cwd, runtime: py.rt, images: { maxImages: 1 } });
      const r = await call(
        {
          cells: [
            {
              code: "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (30, 20)))",
            },
            {
              code: "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (3000, 1000)))",
            },
          ],
        },
        capped,
      );
      assert.deepEqual(sentSizes(r.content), ["1568×523"]);
      assert.equal(
        text(r),
        "[1/2]\n[image left out · cell 1 · over the 1-image limit; run it again in a call that shows fewer images to see it]\n[2/2]\n[image 1 · cell 2 · 1568×523]\n[1 earlier image not included (limit: 1 image per call; the latest are kept)]",
      );
    });
  });
