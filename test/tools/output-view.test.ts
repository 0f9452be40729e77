/**
 * The model's view of a call's output (docs/output.md), through the tool objects on real kernels:
 * a fair budget per cell, tracebacks kept, long lines cut, clear_output followed, the latest images
 * kept, JSON as text and unseen outputs named.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { ArtifactStore } from "../../src/output/artifacts.js";
import { DEFAULT_IMAGE_BUDGET } from "../../src/output/model-budgets.js";
import { CellRunRecorder } from "../../src/tools/cell-recorder.js";
import { createNotebookExecutor } from "../../src/tools/notebook/executor.js";
import { createPythonTool, type PythonParams } from "../../src/tools/python/python.js";
import { emptyDetails, type PythonToolDetails } from "../../src/tools/python/result.js";
import type { ToolResult } from "../../src/tools/types.js";
import { backendCases } from "../backends.js";
import { writeNb } from "../run/helpers.js";
import { pythonToolOn } from "./python-fixture.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-outview-"));
const cwd = mkdtempSync(join(root, "work-"));
after(() => rmSync(root, { recursive: true, force: true }));

const text = (r: ToolResult<PythonToolDetails>) => (r.content[0] as { text: string }).text;
const num = (n: number) => n.toLocaleString("en-US");

/** The per-cell notice, with the shown ranges taken from details; returns the offset it names. */
function assertNotice(t: string, r: ToolResult<PythonToolDetails>, k: number, name: string, size: string) {
  const out = r.details.cells[k].output!;
  const id = r.details.output.artifactId!;
  assert.ok(id, "an artifact is named");
  const ranges = out.shownLines.map(([a, b]) => (a === b ? num(a) : `${num(a)}-${num(b)}`));
  const hidden = out.shownLines[0][1] + 1;
  const [from, to] = out.artifactLines!;
  const offset = from + hidden - 1;
  const notice = `[${name}: ${num(out.lines)} lines (${size}); showing lines ${ranges.join(" and ")}. All of it: artifact://${id}, lines ${num(from)}-${num(to)}. Read it with the artifact tool: {"id":"${id}","offset":${offset}}]`;
  assert.ok(t.includes(notice), `missing ${notice}\nin ${t.slice(-600)}`);
  return { id, offset, hidden, from };
}

// Every text below is the same on both backends.
for (const backend of backendCases())
  describe(backend.name, () => {
    const py = pythonToolOn(backend, { root, cwd });

    const call = (params: unknown, t = py.tool) => t.execute("t", params as PythonParams);

    test("a 3-cell call whose middle cell prints megabytes shows every cell, and head and tail of the flood", async () => {
      const r = await call({
        cells: [
          { code: "print('cell one says hi')" },
          { code: "for i in range(100000): print(f'row {i:06d} ' + 'x' * 20)" },
          { code: "print('cell three says bye')" },
        ],
      });
      const t = text(r);
      assert.equal(r.isError, undefined, t);
      assert.ok(t.startsWith("[1/3]\ncell one says hi\n[2/3]\nrow 000000 x"), t.slice(0, 200));
      assert.match(t, /\nrow 099999 x{20}\n\[cell 2: /);
      assert.ok(t.endsWith("]\n[3/3]\ncell three says bye"), t.slice(-300));
      const { id, offset, hidden } = assertNotice(t, r, 1, "cell 2", "3.1 MB");
      assert.deepEqual(r.details.cells[1].output!.artifactLines, [4, 100003]);
      const gap = r.details.cells[1].output!.shownLines[1][0] - hidden;
      assert.ok(t.includes(`\n… [${num(gap)} lines not shown]\n`));
      assert.ok(Buffer.byteLength(t) < 52 * 1024, `${Buffer.byteLength(t)} bytes`);
      // the offset named is the first line not shown
      const slice = await py.rt.artifacts.read(id, { offset, limit: 1 });
      assert.equal(slice.text, `row ${String(hidden - 1).padStart(6, "0")} ${"x".repeat(20)}\n`);
      const head = await py.rt.artifacts.read(id, { limit: 4 });
      assert.equal(head.text, `[1/3]\ncell one says hi\n[2/3]\nrow 000000 ${"x".repeat(20)}\n`);
    });

    test("a failing cell after floods shows its whole traceback", async () => {
      // 25 distinct frames (IPython folds repeated recursive ones)
      const defs = ["def f0():\n    raise ValueError('deep end')"];
      for (let i = 1; i <= 25; i++) defs.push(`def f${i}():\n    return f${i - 1}()`);
      await call({ cells: [{ code: defs.join("\n") }] });
      const alone = text(await call({ cells: [{ code: "f25()" }] }));
      const frames = (s: string) => s.match(/return f\d+\(\)/g)?.length ?? 0;
      assert.equal(frames(alone), 25, alone);
      // 15 flooding cells: a fair share (~3 KB) is smaller than the traceback, which is reserved
      const flood = "for i in range(5000): print(f'flood {i} ' + 'y' * 30)";
      const cells = Array.from({ length: 14 }, () => ({ code: flood }));
      const r = await call({ cells: [...cells, { code: `${flood}\nf25()` }] });
      const t = text(r);
      assert.equal(r.isError, true);
      const traceback = alone.slice(
        alone.indexOf("\nCell In [", alone.indexOf("f25()")),
        alone.indexOf("ValueError: deep end"),
      );
      assert.ok(traceback.length > 1500, `${traceback.length}`);
      assert.ok(t.includes(traceback), t.slice(-3000));
      assert.match(t, /ValueError: deep end\n\[cell 15: /);
      for (let k = 1; k <= 15; k++)
        assert.match(t, new RegExp(`\\[${k}/15\\]\\nflood 0 y{30}\\n[\\s\\S]*flood 4999 y{30}\\n`));
    });

    test("a notebook run with allow_errors keeps the traceback of a cell followed by a flood", async () => {
      const path = await writeNb(join(cwd, "errors.ipynb"), [
        ["code", "1/0"],
        ["code", "for i in range(100000): print(f'line {i}')"],
      ]);
      const executor = createNotebookExecutor({ runtime: py.rt });
      const r = await executor.run({
        path,
        shownPath: "errors.ipynb",
        cellIndices: [0, 1],
        params: { action: "run", notebook_path: "errors.ipynb", allow_errors: true },
      } as never);
      const t = (r.content[0] as { text: string }).text;
      assert.match(t, /\[cell 0 \(id c0\)\]\n-+\nZeroDivisionError {2,}Traceback/);
      assert.match(t, /ZeroDivisionError: division by zero\n\[cell 1 \(id c1\)\]\nline 0\nline 1\n/);
      assertNotice(t, r as ToolResult<PythonToolDetails>, 1, "cell 1", "1.0 MB");
    });

    test("a 300 KB single line is cut with a marker, never sent whole", async () => {
      const r = await call({ cells: [{ code: "print('a' * 300000)\nprint('next line')" }] });
      const t = text(r);
      const m =
        /^(a+)… \[line cut: ([\d,]+) more characters\]\nnext line\n\[cell 1: 2 lines \(293 KB\); 1 long line cut\. All of it: artifact:\/\/([\w-]+), lines 1-2\. Read it with the artifact tool: \{"id":"\3","offset":1\}\]$/.exec(
          t,
        );
      assert.ok(m, t.slice(-400));
      assert.equal(m[1].length + Number(m[2].replace(/,/g, "")), 300000);
      assert.ok(m[1].length <= 50 * 1024);
      const whole = await py.rt.artifacts.read(m[3], { limit: 2, maxBytes: 400_000 });
      assert.equal(whole.text, `${"a".repeat(300000)}\nnext line\n`);
    });

    test("a clear_output(wait=True) loop of 30 plotted frames returns the last frame's text and image", async () => {
      const setup =
        "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\nfrom IPython.display import clear_output\n" +
        "def frame(i):\n    plt.figure(figsize=(2 + i / 10, 2))\n    plt.plot([0, i])\n    plt.show()";
      const r = await call({
        cells: [
          {
            code: `${setup}\nfor i in range(30):\n    clear_output(wait=True)\n    print(f'frame {i}')\n    frame(i)`,
          },
        ],
        timeout: 120,
      });
      const sent = r.details.images[0];
      assert.equal(text(r), `frame 29\n[image 1 · cell 1 · ${sent.sentWidth}×${sent.sentHeight}]`);
      assert.equal(r.content.filter((c) => c.type === "image").length, 1);
      assert.equal(r.details.images.length, 1);
      assert.equal(r.details.droppedImages, undefined);
      const last = await call({ cells: [{ code: "frame(29)" }] });
      assert.equal(r.details.images[0].width, last.details.images[0].width);
      assert.equal(r.details.images[0].height, last.details.images[0].height);
      assert.deepEqual(r.content[1], last.content[1], "the image sent is the last frame's");
    });

    test("clear_output() drops what the cell showed at once; with wait=True only when more output comes", async () => {
      const r = await call({
        cells: [
          { code: "from IPython.display import clear_output\nprint('old')\nclear_output()\nprint('new')" },
          { code: "print('kept')\nclear_output(wait=True)" },
        ],
      });
      assert.equal(text(r), "[1/2]\nnew\n[2/2]\nkept");
    });

    test("output cleared before a flood stays in the artifact, marked; the cell's range starts after it", async () => {
      const r = await call({
        cells: [
          {
            code: "from IPython.display import clear_output\nprint('before the clear')\nclear_output()\nfor i in range(20000): print(f'after {i:05d} ' + 'z' * 20)",
          },
        ],
      });
      const t = text(r);
      assert.ok(t.startsWith("after 00000 z"), t.slice(0, 100));
      assert.ok(!t.includes("before the clear"));
      assert.match(t, /\[cell 1 since its last clear_output: 20,000 lines \(/);
      const out = r.details.cells[0].output!;
      assert.deepEqual(out.artifactLines, [3, 20002]);
      const slice = await py.rt.artifacts.read(r.details.output.artifactId!, { limit: 3 });
      assert.equal(slice.text, `before the clear\n[output cleared]\nafter 00000 ${"z".repeat(20)}\n`);
    });

    test("an updated display in a flood: replaced in the text; the artifact keeps each state, the notice stays true", async () => {
      const r = await call({
        cells: [
          {
            code: "h = display('state 0', display_id=True)\nfor i in range(20000): print(f'row {i:05d} ' + 'y' * 20)\nfor k in range(1, 4): h.update(f'state {k}')\nh2 = display({'text/plain': 'two'}, raw=True, display_id=True)\nh2.update({'text/plain': 'two\\nlines'}, raw=True)",
          },
        ],
      });
      const t = text(r);
      assert.ok(t.startsWith(`'state 3'\nrow 00000 ${"y".repeat(20)}\n`), t.slice(0, 100));
      assert.ok(!t.includes("state 0") && !t.includes("state 1"));
      assert.match(t, /\nrow 19999 y{20}\ntwo\nlines\n\[cell 1: 20,003 lines \(/);
      const out = r.details.cells[0].output!;
      // the artifact: the first states where they were shown, then each update after its marker
      assert.deepEqual(out.artifactLines, [1, 20002 + 3 * 2 + 3]);
      const id = r.details.output.artifactId!;
      const { offset, hidden } = assertNotice(t, r, 0, "cell 1", "605 KB");
      const slice = await py.rt.artifacts.read(id, { offset, limit: 1 });
      assert.equal(slice.text, `row ${String(hidden - 2).padStart(5, "0")} ${"y".repeat(20)}\n`);
      const end = await py.rt.artifacts.read(id, { offset: 20002, limit: 20 });
      assert.equal(
        end.text,
        "[display updated]\n'state 1'\n[display updated]\n'state 2'\n[display updated]\n'state 3'\ntwo\n[display updated]\ntwo\nlines\n",
      );
    });

    test("when images pass the limit the latest are kept, and the text says how many earlier ones were left out", async () => {
      const capped = createPythonTool({ cwd, runtime: py.rt, images: { maxImages: 3 } });
      const r = await call(
        {
          cells: [
            {
              code: "from PIL import Image\nfrom IPython.display import display\nfor i in range(10):\n    display(Image.new('RGB', (10 + i, 5)))",
            },
          ],
        },
        capped,
      );
      assert.deepEqual(
        r.details.images.map((i) => i.width),
        [17, 18, 19],
      );
      assert.equal(r.content.filter((c) => c.type === "image").length, 3);
      assert.equal(r.details.droppedImages, 7);
      assert.match(
        text(r),
        /\n\[7 earlier images not included \(limit: 3 images per call; the latest are kept\)\]$/,
      );
    });

    test("display(JSON(...)) reaches the model as compact JSON text", async () => {
      const r = await call({
        cells: [
          {
            code: "from IPython.display import JSON, display\ndisplay(JSON({'a': [1, 2], 'b': {'c': 'd é'}}))",
          },
        ],
      });
      assert.equal(text(r), '{"a":[1,2],"b":{"c":"d é"}}');
      assert.deepEqual(r.details.jsonOutputs, [{ cell: 1, data: { a: [1, 2], b: { c: "d é" } } }]);
    });

    test("outputs the model cannot see are named with their size; a text form comes first", async () => {
      const plotly = { data: [{ x: Array.from({ length: 3000 }, (_, i) => i), type: "scatter" }] };
      const widget = { model_id: "abc123", version_major: 2, version_minor: 0 };
      const r = await call({
        cells: [
          {
            code: `from IPython.display import display\nimport json\ndisplay({'application/vnd.plotly.v1+json': json.loads(${JSON.stringify(JSON.stringify(plotly))})}, raw=True)\ndisplay({'text/plain': 'IntSlider(value=0)', 'application/vnd.jupyter.widget-view+json': json.loads(${JSON.stringify(JSON.stringify(widget))})}, raw=True)`,
          },
        ],
      });
      const kb = Math.round(Buffer.byteLength(JSON.stringify(plotly)) / 1024);
      assert.equal(
        text(r),
        `[application/vnd.plotly.v1+json, ${kb} KB, not shown]\nIntSlider(value=0)\n[application/vnd.jupyter.widget-view+json, ${Buffer.byteLength(JSON.stringify(widget))} bytes, not shown]`,
      );
    });

    test("no artifact file is left when nothing was cut, even after a flood that was cleared", async () => {
      const dir = py.rt.artifacts.outputsDir(py.rt.defaultSessionId);
      const before = readdirSync(dir).length;
      const r = await call({
        cells: [
          {
            code: "from IPython.display import clear_output\nfor i in range(3000): print(f'frame {i} ' + 'w' * 50)\nclear_output()\nprint('short')",
          },
        ],
      });
      assert.equal(text(r), "short");
      assert.equal(r.details.output.artifactId, undefined);
      assert.equal(r.details.cells[0].output?.truncated, false);
      assert.equal(readdirSync(dir).length, before);
    });
  });

test("a runs look shows a display replaced since the last look again, from its line (docs/runs.md)", () => {
  const details = emptyDetails("session", "s", cwd, 50 * 1024);
  details.cells = [{ index: 1, status: "pending" }];
  const recorder = new CellRunRecorder({
    artifacts: new ArtifactStore({ root: join(root, "looks") }),
    session: "s",
    maxBytes: 50 * 1024,
    images: DEFAULT_IMAGE_BUDGET,
    updateIntervalMs: 0,
    details,
  });
  recorder.startCell(1);
  const hooks = recorder.hooks(1);
  const display = (text: string, source: "display_data" | "update_display_data") =>
    hooks.onDisplay?.({
      type: "text",
      data: { "text/plain": text },
      metadata: {},
      text,
      source,
      displayId: "d",
    });
  hooks.onChunk?.("a\n", "stdout");
  display("'step 0'", "display_data");
  hooks.onChunk?.("b\n", "stdout");
  const first = recorder.snapshot(1);
  assert.equal(first.text, "a\n'step 0'\nb");
  hooks.onChunk?.("c\n", "stdout");
  const second = recorder.snapshot(1, first.currentView);
  assert.equal(second.text, "… [lines 1-3 shown before]\nc");
  display("'step 1'\n'and more'", "update_display_data");
  const third = recorder.snapshot(1, second.currentView);
  assert.equal(third.text, "… [line 1 shown before]\n'step 1'\n'and more'\nb\nc");
  hooks.onChunk?.("d\n", "stdout");
  assert.equal(recorder.snapshot(1, third.currentView).text, "… [lines 1-5 shown before]\nd");
});
