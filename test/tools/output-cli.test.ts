/**
 * The model's view of output through `nbagent batch` (one process, one kernel, JSON lines), read as
 * an agent reads it: a flood in the middle of a call, a traceback after a flood, a huge line, a
 * live-updating plot, JSON and a plotly figure.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { after, before, test } from "node:test";
import { imageSize } from "../../src/tools/notebook/outputs.js";
import { batch, type Json, nbagent, resultText, tempDir } from "../run/helpers.js";

let dir: string;
let results: Json[];
let stderr: string;
before(async () => {
  dir = await tempDir("nbagent-outview-cli-");
  const py = (cells: { code: string }[], timeout = 120) => ({ tool: "python", params: { cells, timeout } });
  const plot =
    "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\nimport matplotlib.pyplot as plt\nfrom IPython.display import clear_output";
  const out = await batch(dir, [
    py([
      { code: "print('first cell output')" },
      { code: "for i in range(200000): print(f'noise {i:06d} ' + '#' * 10)" },
      { code: "print('third cell output')" },
    ]),
    py([
      { code: "for i in range(100000): print(i)" },
      { code: "raise KeyError('missing key after the flood')" },
    ]),
    py([{ code: "print('q' * 300000)" }]),
    py([
      {
        code: `${plot}\nfor i in range(30):\n    clear_output(wait=True)\n    print(f'frame {i} of 30')\n    plt.plot([0, i]); plt.title(f'frame {i}'); plt.show()`,
      },
    ]),
    py([
      {
        code: "from IPython.display import JSON, display\ndisplay(JSON({'rows': 3, 'cols': ['a', 'b']}))\ndisplay({'application/vnd.plotly.v1+json': {'data': [{'y': list(range(5000))}]}}, raw=True)",
      },
    ]),
  ]);
  results = out.results;
  stderr = out.stderr;
  assert.equal(results.length, 5, stderr);
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("a middle cell's flood leaves cells 1 and 3 whole and shows its own head, tail and notice", async () => {
  const r = results[0];
  const t = resultText(r);
  assert.equal(r.isError, false, t.slice(-500));
  assert.ok(t.startsWith("[1/3]\nfirst cell output\n[2/3]\nnoise 000000 ##########\n"), t.slice(0, 200));
  assert.ok(t.endsWith("\n[3/3]\nthird cell output"), t.slice(-300));
  assert.match(
    t,
    /\nnoise 199999 #{10}\n\[cell 2: 200,000 lines \(4\.6 MB\); showing lines 1-[\d,]+ and [\d,]+-200,000\. All of it: artifact:\/\/[\w-]+, lines 4-200,003\. Read it with the artifact tool: \{"id":"[\w-]+","offset":\d+\}\]\n/,
  );
  // the offset named reads on from the first hidden line, in another process
  const [, id, offset] = /\{"id":"([\w-]+)","offset":(\d+)\}/.exec(t)!;
  const firstHidden = r.details.cells[1].output.shownLines[0][1];
  const page = await nbagent(["artifact", id, "--offset", offset, "--limit", "1"]);
  assert.equal(page.stdout, `noise ${String(firstHidden).padStart(6, "0")} ##########\n`, page.stderr);
});

test("a failing cell after a flood shows its traceback", () => {
  const t = resultText(results[1]);
  assert.equal(results[1].isError, true);
  assert.match(t, /^\[1\/2\]\n0\n1\n2\n/);
  assert.match(
    t,
    /\[2\/2\]\n-+\nKeyError +Traceback \(most recent call last\)\n[\s\S]*KeyError: 'missing key after the flood'\n/,
  );
});

test("a 300 KB line is cut with a marker", () => {
  const t = resultText(results[2]);
  assert.match(
    t,
    /^q+… \[line cut: [\d,]+ more characters\]\n\[cell 1: 1 line \(293 KB\); 1 long line cut\. All of it: artifact:\/\/[\w-]+, line 1\./,
  );
  assert.ok(Buffer.byteLength(t) < 52 * 1024);
});

test("a clear_output(wait=True) loop returns only the last frame's text and image", () => {
  const r = results[3];
  const images = r.content.filter((c: Json) => c.type === "image");
  assert.equal(images.length, 1);
  const sent = imageSize(images[0].mimeType, images[0].data)!;
  assert.equal(resultText(r), `frame 29 of 30\n[image 1 · cell 1 · ${sent.width}×${sent.height}]`);
});

test("JSON reaches the model as compact text; a plotly figure is named", () => {
  const t = resultText(results[4]);
  assert.equal(t, '{"rows":3,"cols":["a","b"]}\n[application/vnd.plotly.v1+json, 23 KB, not shown]');
});
