/**
 * One view of outputs (docs/output.md, "Rich outputs" and "Tracebacks"), through `nbagent batch` on
 * real kernels as an agent reads it: a `run` and a `read` of the same outputs say the same (a Styler
 * as its table with its marks, an HTML's embedded image sent), names stay as code must write them,
 * library frames of a traceback fold into a line that says where the whole is, error headlines carry
 * no kernel prefix twice nor IPython's temporary file, and images left out name the call that
 * returns them. R (IRkernel) where the issue named it.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { batch, type Json, nbagent, resultText, tempDir, writeNb } from "../run/helpers.js";

const STYLER =
  "import pandas as pd\ndf = pd.DataFrame({'styled_col': [1, 5, 3], 'b': [4, 2, 6]}, index=pd.Index(['x', 'y', 'z'], name='key'))\ndf.style.highlight_max()";
/** The Styler's table as the model reads it, from a run and from a read alike. */
const STYLER_TEXT = [
  "| key | styled_col | b |",
  "| --- | --- | --- |",
  "| x | 1 | 4 |",
  "| y | **5** | 2 |",
  "| z | 3 | **6** |",
  "",
  "[cells in bold are styled: background-color: yellow]",
].join("\n");
const HTML_IMAGE =
  "import base64, io\nfrom PIL import Image\nfrom IPython.display import HTML, display\n_b = io.BytesIO(); Image.new('RGB', (40, 30), (200, 30, 30)).save(_b, 'PNG')\nfor _ in range(2): display(HTML('<p>chart:</p><img src=\"data:image/png;base64,' + base64.b64encode(_b.getvalue()).decode() + '\"><p>end</p>'))";
const MERGE =
  "import pandas as pd\npd.merge(pd.DataFrame({'k': [1, 2]}), pd.DataFrame({'j': [1, 2]}), on='key')";
const RESAMPLE =
  "import pandas as pd\ns = pd.Series(range(5), index=pd.date_range('2024-01-01', periods=5))\ns.resample('bogus').mean()";
const images = (n: number, w: number) =>
  `from PIL import Image\nfrom IPython.display import display\nfor i in range(${n}): display(Image.new('RGB', (${w}, 10)))`;
/** A fold line, with the artifact's id and lines captured. */
const FOLD_RUN =
  /\n… \[(\d+) library frames folded \(([^)]*)\); the whole traceback: artifact:\/\/([\w-]+), lines (\d+)-(\d+)\]\n/;

let dir: string;
let r: Json[];
let stderr: string;
const nb = () => join(dir, "an.ipynb");
const rnb = () => join(dir, "r.ipynb");
const text = (k: number) => resultText(r[k]);
const imageCount = (k: number) =>
  (r[k].content as { type: string }[]).filter((c) => c.type === "image").length;

before(async () => {
  dir = await tempDir("nbagent-oneview-");
  await writeNb(nb(), [
    ["code", STYLER],
    ["code", images(1, 11)],
    ["code", images(6, 12)],
    ["code", HTML_IMAGE],
    ["code", MERGE],
  ]);
  await writeNb(
    rnb(),
    [
      ["code", "df <- data.frame(region = c('a', 'b'), value = c(1.5, 2))\ndf"],
      ["code", "undefined_var + 1"],
    ],
    { name: "ir", display_name: "R", language: "R" },
  );
  const py = (code: string) => ({ tool: "python", params: { cells: [{ code }], timeout: 120 } });
  const notebook = (params: Record<string, unknown>) => ({ tool: "notebook", params });
  const out = await batch(dir, [
    py(STYLER), // 0
    py(MERGE), // 1
    py(RESAMPLE), // 2
    py("x = 1\nif x\n  pass"), // 3
    notebook({
      action: "run",
      notebook_path: "an.ipynb",
      cell_range: [0, 4],
      allow_errors: true,
      timeout: 120,
    }), // 4
    notebook({ action: "read", notebook_path: "an.ipynb" }), // 5
    notebook({ action: "read", notebook_path: "an.ipynb", cell_index: 0 }), // 6
    notebook({ action: "read", notebook_path: "an.ipynb", cell_index: 3 }), // 7
    notebook({ action: "read", notebook_path: "an.ipynb", cell_index: 4 }), // 8
    notebook({ action: "read", notebook_path: "an.ipynb", cell_index: 1 }), // 9
    notebook({ action: "run", notebook_path: "r.ipynb", cell_range: [0, 1], timeout: 120 }), // 10
    notebook({ action: "read", notebook_path: "r.ipynb" }), // 11
  ]);
  r = out.results;
  stderr = out.stderr;
  assert.equal(r.length, 12, stderr);
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("run and read show the same outputs", () => {
  test("a Styler with an index name: one header row, highlight_max's cells marked, names unescaped", () => {
    assert.equal(text(0), STYLER_TEXT);
    assert.ok(text(4).includes(`[cell 0 (id c0)]\n${STYLER_TEXT}\n[cell 1`), text(4));
    // reading the cell alone says the same, and the all-cells view starts the same
    assert.ok(text(6).endsWith(`-- output 0 · execute_result (Out[1])\n${STYLER_TEXT}`), text(6));
    assert.ok(
      text(5).includes(
        "-- outputs (1 execute_result)\n   | key | styled_col | b |\n   | --- | --- | --- |\n   | x | 1 | 4 |\n   … (3 more lines)",
      ),
      text(5),
    );
    assert.doesNotMatch(text(5), /Styler|styled\\_col|text\/html/);
  });

  test("an HTML display's data-URI image is sent by read as by run, labelled at its place", () => {
    const shown = (n: number) => `chart:\n\n[image ${n} · cell 3 · 40×30]\n\nend`;
    assert.ok(text(4).includes(`[cell 3 (id c3)]\n${shown(7)}\n${shown(8)}\n[cell 4`), text(4));
    assert.ok(
      text(7).endsWith(`-- output 0 · display_data\n${shown(1)}\n-- output 1 · display_data\n${shown(2)}`),
      text(7),
    );
    assert.equal(imageCount(7), 2);
    assert.doesNotMatch(text(7), /iVBOR/);
  });

  test("images over the limit say the call that returns them (run and a read of many cells)", () => {
    // the run keeps the latest 8 of 9: cell 1's is left out (it names the read that returns it)
    assert.ok(
      text(4).includes(
        `[cell 1 (id c1)]\n[image left out · cell 1 · over the 8-image limit; reading the cell sends it: {"action":"read","notebook_path":"an.ipynb","cell_index":1}]\n[cell 2`,
      ),
      text(4),
    );
    assert.equal(imageCount(4), 8);
    // a read of every cell sends the first 8 in document order; the rest name the read of their cell
    assert.equal(imageCount(5), 8);
    assert.ok(
      text(5).includes(
        `   chart:\n   [image 8 · cell 3 · 40×30]\n   end\n   chart:\n   [image left out · cell 3 · a read sends its first 8 images; reading cell 3 alone sends it: {"action":"read","notebook_path":"an.ipynb","cell_index":3}]\n   end`,
      ),
      text(5),
    );
    // and those calls do
    assert.equal(imageCount(9), 1);
    assert.match(text(9), /\[image 1 · cell 1 · 11×10\]/);
    assert.equal(imageCount(7), 2);
  });
});

describe("tracebacks fold library frames", () => {
  test("a pandas merge KeyError: the cell's frame and the raising frame whole, merge.py's folded", async () => {
    const t = text(1);
    const m = FOLD_RUN.exec(t);
    assert.ok(m, t);
    assert.equal(m[1], "3");
    assert.equal(m[2], "pandas/core/reshape/merge.py");
    assert.match(t, /^-+\nKeyError +Traceback \(most recent call last\)\nCell In ?\[\d+\], line 2\n/);
    assert.match(t, /----> 2 pd\.merge\(/);
    assert.match(t, /\nFile \S+pandas\/core\/generic\.py:\d+, in NDFrame\._get_label_or_level_values\(/);
    assert.match(t, /\n-> +\d+ +raise KeyError\(key\)\n/);
    assert.ok(t.endsWith("\nKeyError: 'key'\nCell 1 failed: KeyError: 'key'."), t);
    assert.doesNotMatch(t, /_MergeOperation/);
    // the lines named hold the whole traceback, frames folded included
    const [, , , id, first, last] = m;
    const page = await nbagent(["artifact", id, "--offset", first, "--limit", String(+last - +first + 1)]);
    assert.match(page.stdout, /^-+\nKeyError +Traceback/);
    assert.match(page.stdout, /_MergeOperation\.__init__/);
    assert.match(page.stdout, /\nKeyError: 'key'\n$/);
  });

  test("a bad resample rule: the chained exceptions stay, the run of pandas frames folds", () => {
    const t = text(2);
    const m = FOLD_RUN.exec(t);
    assert.ok(m, t);
    assert.equal(m[1], "5");
    assert.match(m[2], /^pandas\/core\/series\.py, pandas\/core\/generic\.py, pandas\/core\/resample\.py/);
    assert.match(t, /KeyError: 'BOGUS'\n\nThe above exception was the direct cause/);
    assert.match(t, /----> 3 s\.resample\('bogus'\)\.mean\(\)\n/);
    assert.ok(
      t.endsWith(
        "ValueError: Invalid frequency: bogus\nCell 1 failed: ValueError: Invalid frequency: bogus.",
      ),
    );
    assert.doesNotMatch(t, /TimeGrouper/);
  });

  test("a notebook run folds as the python tool does; read of the failed cell folds too", () => {
    assert.match(text(4), FOLD_RUN);
    const t = text(8);
    assert.match(
      t,
      /\n… \[3 library frames folded \(pandas\/core\/reshape\/merge\.py\); the whole traceback: cells\[4\]\.outputs\[0\]\.traceback in the file\]\n/,
    );
    assert.match(t, /-- output 0 · error · KeyError: 'key'\n/);
    assert.ok(t.endsWith("\nKeyError: 'key'"), t);
  });
});

describe("error headlines and R", () => {
  test("a syntax error names the line of the cell, not IPython's temporary file", () => {
    const t = text(3);
    assert.ok(t.endsWith("\nCell 1 failed: SyntaxError: expected ':' (line 2 of the cell)."), t);
    assert.doesNotMatch(t, /\d+\.py/);
  });

  test("an R data.frame reads region <chr>; an R error is not prefixed ERROR: twice", () => {
    const run = text(10);
    assert.ok(run.includes("| region <chr> | value <dbl> |\n|---|---|\n| a | 1.5 |"), run);
    assert.doesNotMatch(run, /&lt;|ERROR:/);
    assert.match(
      run,
      /\nCell 1 failed: Error in eval\(expr, envir, enclos\): object 'undefined_var' not found\.\n/,
    );
    const read = text(11);
    assert.ok(read.includes("   A data.frame: 2 × 2\n   | region <chr> | value <dbl> |\n"), read);
    assert.ok(
      read.includes(
        "-- outputs (1 error)\n   Error in eval(expr, envir, enclos): object 'undefined_var' not found\n",
      ),
      read,
    );
  });
});
