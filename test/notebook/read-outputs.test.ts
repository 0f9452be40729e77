/**
 * Item 14 of issue 8: reading one cell shows its saved outputs whole within the read budget —
 * stream text, text/plain, tracebacks (ANSI stripped), image markers, other mimetypes named with
 * their size — and cuts with a clear marker only past the budget, fairly between outputs. The
 * all-cells view keeps short summaries but always shows a saved error's name and value.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import sharp from "sharp";
import { createNotebookTool } from "../../src/tools/notebook/notebook.js";
import { batch, resultText } from "../run/helpers.js";
import { call, tempDir, text, writeNotebook } from "./helpers.js";

const PNG_640x480 =
  "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAIAAAC6s0uzAAAADUlEQVR4nGNgGAWDEwAAAZAAAcb6mX0AAAAASUVORK5CYII=";

const TRACEBACK = [
  "\u001b[0;31m---------------------------------------------------------------------------\u001b[0m",
  "\u001b[0;31mKeyError\u001b[0m                                  Traceback (most recent call last)",
  "Cell \u001b[0;32mIn[4], line 2\u001b[0m\n\u001b[1;32m      1\u001b[0m d \u001b[38;5;241m=\u001b[39m {}\n\u001b[0;32m----> 2\u001b[0m \u001b[43md\u001b[49m\u001b[43m[\u001b[49m\u001b[38;5;124;43m'\u001b[39;49m\u001b[38;5;124;43mmissing\u001b[39;49m\u001b[38;5;124;43m'\u001b[39;49m\u001b[43m]\u001b[49m\n",
  "\u001b[0;31mKeyError\u001b[0m: 'missing'",
];

async function sample(dir: string): Promise<string> {
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i + 1}\n`);
  return writeNotebook(join(dir, "nb.ipynb"), [
    {
      source: "for i in range(12): print(f'line {i+1}')\nshow()",
      execution_count: 3,
      outputs: [
        { output_type: "stream", name: "stdout", text: lines },
        {
          output_type: "display_data",
          data: {
            "image/png": PNG_640x480,
            "text/html": ["<b>", "x".repeat(2000), "</b>"],
            "text/plain": ["<Figure size 640x480 with 1 Axes>"],
          },
          metadata: {},
        },
        {
          output_type: "execute_result",
          execution_count: 3,
          data: { "text/plain": ["{'a': 1,\n", " 'b': 2}"], "application/json": { a: 1, b: 2 } },
          metadata: {},
        },
        { output_type: "stream", name: "stderr", text: ["progress 10%\r", "progress 100%\n"] },
      ],
    },
    {
      source: "d = {}\nd['missing']",
      execution_count: 4,
      outputs: [
        ...Array.from({ length: 7 }, (_, i) => ({
          output_type: "stream",
          name: "stdout",
          text: [`out ${i}\n`],
        })),
        { output_type: "error", ename: "KeyError", evalue: "'missing'", traceback: TRACEBACK },
      ],
    },
  ]);
}

describe("read of one cell shows its outputs whole", () => {
  test("stream text, text/plain, image labels and unseen types as a run names them, ANSI-free tracebacks; the file untouched", async () => {
    const dir = await tempDir();
    const path = await sample(dir);
    const before = await readFile(path);
    const r = await call(dir, { action: "read", notebook_path: "nb.ipynb", cell_index: 0 });
    const t = text(r);
    assert.match(
      t,
      /^nb\.ipynb: 2 cells, nbformat 4\.5\n\n## cell 0 · code · id cell-0 · execution_count 3\n/,
    );
    assert.match(
      t,
      /-- outputs \(2 stream, 1 display_data, 1 execute_result\)\n-- output 0 · stdout\nline 1\n/,
    );
    for (let i = 1; i <= 12; i++) assert.ok(t.includes(`line ${i}\n`), `line ${i}`);
    assert.match(t, /-- output 1 · display_data\n\[image 1 · cell 0 · 640×480\]\n-- output 2 /);
    assert.match(
      t,
      /-- output 2 · execute_result \(Out\[3\]\)\n\{'a': 1,\n 'b': 2\}\n\[application\/json, 13 bytes, not shown\]\n/,
    );
    assert.match(
      t,
      /-- output 3 · stderr\nprogress 100%$/,
      "a carriage return overwrites the line, as a terminal shows it",
    );
    assert.doesNotMatch(t, /Outputs are summarised/);

    const e = text(await call(dir, { action: "read", notebook_path: "nb.ipynb", cell_id: "cell-1" }));
    assert.match(
      e,
      /-- output 7 · error · KeyError: 'missing'\n-{75}\nKeyError {34}Traceback \(most recent call last\)\nCell In\[4\], line 2\n/,
    );
    assert.match(e, /----> 2 d\['missing'\]\n\nKeyError: 'missing'$/);
    assert.doesNotMatch(e, /\u001b/);
    assert.deepEqual(await readFile(path), before);
  });

  test("a saved Math or Markdown display reads as its source, not as its object repr", async () => {
    const dir = await tempDir();
    await writeNotebook(join(dir, "math.ipynb"), [
      {
        source: "display(Math(r'\\int_0^1 x\\,dx'))\ndisplay(Markdown('**bold**'))",
        execution_count: 1,
        outputs: [
          {
            output_type: "display_data",
            data: {
              "text/latex": ["$\\displaystyle \\int_0^1 x\\,dx$"],
              "text/plain": ["<IPython.core.display.Math object>"],
            },
            metadata: {},
          },
          {
            output_type: "display_data",
            data: { "text/markdown": ["**bold**"], "text/plain": ["<IPython.core.display.Markdown object>"] },
            metadata: {},
          },
        ],
      },
    ]);
    const one = text(await call(dir, { action: "read", notebook_path: "math.ipynb", cell_index: 0 }));
    assert.match(
      one,
      /-- output 0 · display_data\n\$\\displaystyle \\int_0\^1 x\\,dx\$\n-- output 1 · display_data\n\*\*bold\*\*$/,
    );
    const all = text(await call(dir, { action: "read", notebook_path: "math.ipynb" }));
    assert.match(all, / {3}\$\\displaystyle \\int_0\^1 x\\,dx\$\n {3}\*\*bold\*\*$/);
    assert.doesNotMatch(all, /object>/);
  });

  test("past the budget each output keeps its head and tail around a marker saying where the rest is", async () => {
    const dir = await tempDir();
    const big = (tag: string) => Array.from({ length: 4000 }, (_, i) => `${tag} ${i}\n`);
    await writeNotebook(join(dir, "big.ipynb"), [
      {
        source: "noisy()",
        execution_count: 1,
        outputs: [
          { output_type: "stream", name: "stdout", text: big("first") },
          { output_type: "stream", name: "stderr", text: ["short warning\n"] },
          { output_type: "stream", name: "stdout", text: big("second") },
          {
            output_type: "error",
            ename: "RuntimeError",
            evalue: "late failure",
            traceback: ["Traceback line A", "RuntimeError: late failure"],
          },
        ],
      },
    ]);
    const tool = createNotebookTool({ cwd: dir, readBudget: 6_000 });
    const t = text(await tool.execute("t", { action: "read", notebook_path: "big.ipynb", cell_index: 0 }));
    assert.ok(t.length < 7_000, `bounded: ${t.length}`);
    for (const tag of ["first", "second"]) {
      assert.ok(t.includes(`${tag} 0\n`), `${tag}: head kept`);
      assert.ok(t.includes(`${tag} 3999`), `${tag}: tail kept`);
    }
    assert.match(
      t,
      /\[… [\d,]+ of [\d,]+ characters cut here to fit the read budget; cells\[0\]\.outputs\[0\] in the file holds them all\]/,
    );
    assert.match(t, /cells\[0\]\.outputs\[2\] in the file holds them all/);
    assert.match(t, /short warning/);
    assert.match(t, /Traceback line A\nRuntimeError: late failure/, "the small traceback is whole");
  });
});

describe("the all-cells view", () => {
  test("keeps short summaries, shows every saved error's name and value, says how to see more once", async () => {
    const dir = await tempDir();
    await sample(dir);
    const t = text(await call(dir, { action: "read", notebook_path: "nb.ipynb" }));
    assert.match(t, /stdout: line 1\n {3}stdout: line 2\n {3}stdout: line 3\n {3}stdout: … \(9 more lines\)/);
    assert.match(t, /… 1 more output\n {3}KeyError: 'missing'|KeyError: 'missing'\n {3}… 1 more output/);
    assert.doesNotMatch(t, /line 12/);
    const notes = t.match(/read one cell \(cell_index or cell_id\) to see its outputs whole/g) ?? [];
    assert.equal(notes.length, 1, "the notice appears once");
  });

  test("through nbagent batch: a real run's output, then read of that cell shows all of it", async () => {
    const dir = await tempDir();
    await writeNotebook(join(dir, "run.ipynb"), [
      { source: "for i in range(8):\n    print('row', i)\n{}['k']" },
    ]);
    const { results } = await batch(dir, [
      { tool: "notebook", params: { action: "run", notebook_path: "run.ipynb" } },
      { tool: "notebook", params: { action: "read", notebook_path: "run.ipynb" } },
      { tool: "notebook", params: { action: "read", notebook_path: "run.ipynb", cell_index: 0 } },
    ]);
    const summary = resultText(results[1]);
    assert.match(summary, /stdout: … \(5 more lines\)/);
    assert.match(summary, /KeyError: 'k'/);
    const one = resultText(results[2]);
    for (let i = 0; i < 8; i++) assert.ok(one.includes(`row ${i}\n`), `row ${i}`);
    assert.match(one, /-- output 1 · error · KeyError: 'k'\n/);
    assert.match(one, /Traceback \(most recent call last\)/);
    assert.match(one, /KeyError: 'k'$/);
    assert.doesNotMatch(one, /\u001b/);
  });

  test("a refused input(): run tells the model in one line; the saved output keeps the kernel's traceback", async () => {
    const dir = await tempDir();
    await writeNotebook(join(dir, "ask.ipynb"), [{ source: "x = input('name? ')\ny = input('age? ')" }]);
    const { results } = await batch(dir, [
      { tool: "notebook", params: { action: "run", notebook_path: "ask.ipynb" } },
    ]);
    const run = resultText(results[0]);
    assert.match(run, /EOFError: stdin is not available in this kernel: input\(\) cannot be answered\./);
    assert.ok(run.includes("y = input('age? ')"), run);
    assert.doesNotMatch(run, /kernelbase\.py/);
    const saved = JSON.parse(await readFile(join(dir, "ask.ipynb"), "utf8"));
    const error = saved.cells[0].outputs.find((o: { output_type: string }) => o.output_type === "error");
    assert.equal(error.ename, "EOFError");
    assert.match(error.traceback.join("\n"), /kernelbase\.py/, "saved as the kernel sent it");
  });
});

describe("read sends a cell's saved images as image content, labelled at their place", () => {
  const png = async (width: number, height: number, r: number, g: number, b: number) =>
    (
      await sharp({ create: { width, height, channels: 3, background: { r, g, b } } })
        .png()
        .toBuffer()
    ).toString("base64");
  const pixel = async (data: string) => {
    const { data: raw, info } = await sharp(Buffer.from(data, "base64"))
      .raw()
      .toBuffer({ resolveWithObject: true });
    return [info.width, info.height, ...raw.subarray(0, 3)];
  };
  const shown = (data: string, text?: string) => ({
    output_type: "display_data",
    data: { "image/png": data, ...(text ? { "text/plain": [text] } : {}) },
    metadata: {},
  });

  test("one cell: each image downscaled to the budget; all cells: the first 8 in document order", async () => {
    const dir = await tempDir();
    const red = await png(2000, 800, 255, 0, 0);
    const blue = await png(4, 3, 0, 0, 255);
    const green = await png(4, 3, 0, 255, 0);
    await writeNotebook(join(dir, "plots.ipynb"), [
      { type: "markdown", source: "# Plots" },
      {
        source: "plot()",
        execution_count: 1,
        outputs: [
          shown(red, "<Figure size 2000x800 with 1 Axes>"),
          { output_type: "stream", name: "stdout", text: ["done\n"] },
          shown(blue),
        ],
      },
      ...Array.from({ length: 4 }, (_, k) => ({
        source: `more(${k})`,
        execution_count: k + 2,
        outputs: [shown(green), shown(green)],
      })),
    ]);
    const one = await call(dir, { action: "read", notebook_path: "plots.ipynb", cell_index: 1 });
    assert.equal(
      text(one).split("\n## cell 1 · code · id cell-1 · execution_count 1\n")[1],
      [
        "plot()",
        "-- outputs (2 display_data, 1 stream)",
        "-- output 0 · display_data",
        "[image 1 · cell 1 · 1568×627]",
        "-- output 1 · stdout",
        "done",
        "-- output 2 · display_data",
        "[image 2 · cell 1 · 4×3]",
      ].join("\n"),
    );
    assert.deepEqual(
      one.content.map((c) => c.type),
      ["text", "image", "image"],
    );
    const [, first, second] = one.content as { data: string }[];
    assert.deepEqual(await pixel(first.data), [1568, 627, 255, 0, 0]);
    assert.deepEqual(await pixel(second.data), [4, 3, 0, 0, 255]);

    const all = await call(dir, { action: "read", notebook_path: "plots.ipynb" });
    const t = text(all);
    assert.equal(all.content.length, 9);
    for (const [k, cell] of [1, 1, 2, 2, 3, 3, 4, 4].entries()) {
      const size = k === 0 ? "1568×627" : "4×3";
      assert.ok(t.includes(`   [image ${k + 1} · cell ${cell} · ${size}]\n`), `image ${k + 1}: ${t}`);
    }
    assert.equal(
      t.split("\n## cell 5 · code · id cell-5 · execution_count 5\n")[1],
      [
        "more(3)",
        "-- outputs (2 display_data)",
        `   [image left out · cell 5 · a read sends its first 8 images; reading cell 5 alone sends it: {"action":"read","notebook_path":"plots.ipynb","cell_index":5}]`,
        `   [image left out · cell 5 · a read sends its first 8 images; reading cell 5 alone sends it: {"action":"read","notebook_path":"plots.ipynb","cell_index":5}]`,
      ].join("\n"),
    );
    assert.deepEqual(await pixel((all.content[3] as { data: string }).data), [4, 3, 0, 255, 0]);
    // renderers read the summaries from details: they carry the labels too
    assert.equal(all.details.cells?.[2].outputs?.lines[0], "[image 3 · cell 2 · 4×3]");
    assert.deepEqual(
      all.details.images?.map((i) => [i.cell, i.output, i.included]),
      [
        [1, 0, true],
        [1, 2, true],
        [2, 0, true],
        [2, 1, true],
        [3, 0, true],
        [3, 1, true],
        [4, 0, true],
        [4, 1, true],
        [5, 0, false],
        [5, 1, false],
      ],
    );
  });
});
