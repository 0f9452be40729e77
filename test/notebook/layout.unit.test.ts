/**
 * Item 16 of issue 8: a notebook keeps its own layout. Files written by Python's json.dump with
 * indent 2 / 4 / tab, with CRLF line endings, without a final newline, or on one line: an edit,
 * insert or delete through the tool changes only the lines of that cell; everything else stays
 * byte for byte, line endings included. Python's nbformat.validate checks every result.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { loadNotebook, saveNotebook } from "../../src/notebook/index.js";
import { call, Oracle, PYTHON, tempDir, text, writeNotebook } from "./helpers.js";

const run = promisify(execFile);
let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

/** A canonical notebook with outputs, rewritten by Python's json.dump in the given way. */
async function pythonWritten(dir: string, name: string, dumpArgs: string, crlf: boolean): Promise<string> {
  const canonical = await writeNotebook(join(dir, `canonical-${name}`), [
    {
      source: "import math\nprint(math.pi)",
      execution_count: 1,
      outputs: [{ output_type: "stream", name: "stdout", text: ["3.141592653589793\n"] }],
      id: "c0",
    },
    { type: "markdown", source: "# Title\n\nSome *text*", id: "c1" },
    {
      source: "x = 1.0\nx",
      execution_count: 2,
      outputs: [
        {
          output_type: "execute_result",
          execution_count: 2,
          data: { "text/plain": ["1.0"] },
          metadata: {},
        },
      ],
      id: "c2",
    },
    { source: "y = 'é'", id: "c3" },
  ]);
  const path = join(dir, name);
  const script = [
    "import json, sys, nbformat",
    "nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)",
    `text = json.dumps(nb, ${dumpArgs})`,
    crlf ? "text = text.replace('\\n', '\\r\\n')" : "",
    "open(sys.argv[2], 'w', encoding='utf-8', newline='').write(text)",
  ].join("\n");
  await run(PYTHON, ["-c", script, canonical, path]);
  return path;
}

/** Line spans [first, last] of each cell object in the text (cells sit at depth 2). */
function cellLineSpans(lines: string[], indent: string): [number, number][] {
  const spans: [number, number][] = [];
  const open = `${indent}${indent}{`;
  const close = new RegExp(`^${indent}${indent}\\},?$`);
  let start = -1;
  lines.forEach((line, i) => {
    if (line === open) start = i;
    else if (start >= 0 && close.test(line)) {
      spans.push([start, i]);
      start = -1;
    }
  });
  return spans;
}

/** The block of lines that differ, as [from, to) in `a` and in `b` (common prefix and suffix removed). */
function changedBlock(a: string[], b: string[]): { a: [number, number]; b: [number, number] } {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  return { a: [head, a.length - tail], b: [head, b.length - tail] };
}

const within = (block: [number, number], span: [number, number]) =>
  block[0] >= span[0] && block[1] - 1 <= span[1];

const VARIANTS: { name: string; dump: string; crlf: boolean; indent: string }[] = [
  { name: "indent2.ipynb", dump: "indent=2", crlf: false, indent: "  " },
  { name: "indent4.ipynb", dump: "indent=4", crlf: false, indent: "    " },
  { name: "tab.ipynb", dump: "indent='\\t'", crlf: false, indent: "\t" },
  { name: "crlf1.ipynb", dump: "indent=1, sort_keys=True, ensure_ascii=False", crlf: true, indent: " " },
  { name: "crlf2.ipynb", dump: "indent=2", crlf: true, indent: "  " },
];

describe("a file's own layout is kept", () => {
  for (const v of VARIANTS) {
    test(`${v.name}: edit, insert and delete change only that cell's lines`, async () => {
      const dir = await tempDir();
      const path = await pythonWritten(dir, v.name, v.dump, v.crlf);
      const eol = v.crlf ? "\r\n" : "\n";
      const original = await readFile(path, "utf8");
      assert.equal(original.endsWith("}"), true, "json.dump writes no final newline");
      const linesOf = (t: string) => t.split(eol);

      const edit = await call(dir, {
        action: "edit",
        notebook_path: v.name,
        cell_id: "c2",
        content: "x = 2.0\nx",
      });
      assert.equal(edit.isError, undefined, text(edit));
      const edited = await readFile(path, "utf8");
      if (v.crlf) assert.doesNotMatch(edited, /[^\r]\n/, "every line break stays CRLF");
      else assert.doesNotMatch(edited, /\r/);
      assert.equal(edited.endsWith("}"), true, "still no final newline");
      const [a, b] = [linesOf(original), linesOf(edited)];
      const block = changedBlock(a, b);
      assert.ok(block.a[1] > block.a[0], "something changed");
      assert.ok(within(block.a, cellLineSpans(a, v.indent)[2]), `changed lines ${block.a} outside cell 2`);
      assert.ok(within(block.b, cellLineSpans(b, v.indent)[2]), `new lines ${block.b} outside cell 2`);
      assert.ok((await oracle.check(path)).valid);

      const ins = await call(dir, {
        action: "insert",
        notebook_path: v.name,
        cell_index: 1,
        content: "z = 3",
      });
      assert.equal(ins.isError, undefined, text(ins));
      const inserted = await readFile(path, "utf8");
      const c = linesOf(inserted);
      const spans = cellLineSpans(c, v.indent);
      assert.equal(spans.length, 5, "the new cell is indented like the others");
      // Without the new cell's lines, the file is what it was.
      assert.deepEqual([...c.slice(0, spans[1][0]), ...c.slice(spans[1][1] + 1)], b);
      if (v.crlf) assert.doesNotMatch(inserted, /[^\r]\n/);
      assert.ok((await oracle.check(path)).valid);

      const del = await call(dir, { action: "delete", notebook_path: v.name, cell_index: 1 });
      assert.equal(del.isError, undefined, text(del));
      assert.equal(
        await readFile(path, "utf8"),
        edited,
        "deleting the inserted cell gives the edited file back",
      );
    });
  }

  test("a changed frame (metadata) is written in the file's style too", async () => {
    const dir = await tempDir();
    const path = await pythonWritten(dir, "meta.ipynb", "indent=2", true);
    const loaded = await loadNotebook(path);
    loaded.notebook.metadata = { ...(loaded.notebook.metadata as object), added: { deep: [1, 2] } };
    await saveNotebook(loaded);
    const after = await readFile(path, "utf8");
    assert.doesNotMatch(after, /[^\r]\n/);
    assert.match(after, /\r\n {4}"added": \{\r\n {6}"deep": \[\r\n {8}1,/);
    assert.ok((await oracle.check(path)).valid);
  });

  test("a one-line file stays on one line, with its own separators", async () => {
    const dir = await tempDir();
    for (const [name, dump] of [
      ["py.ipynb", ""],
      ["js.ipynb", "separators=(',', ':')"],
    ]) {
      const path = await pythonWritten(dir, name, dump, false);
      const r = await call(dir, { action: "edit", notebook_path: name, cell_index: 1, content: "# New" });
      assert.equal(r.isError, undefined, text(r));
      const after = await readFile(path, "utf8");
      assert.doesNotMatch(after, /\n/);
      if (name === "py.ipynb") assert.match(after, /"cell_type": "markdown", "id": "c1"/);
      else assert.match(after, /"cell_type":"markdown","id":"c1"/);
      assert.ok((await oracle.check(path)).valid);
    }
  });

  test("unsorted keys (json.dump of a hand-built dict) stay where they are outside the edited cell", async () => {
    const dir = await tempDir();
    const path = join(dir, "unsorted.ipynb");
    await run(PYTHON, [
      "-c",
      [
        "import json, sys",
        "cells = [{'id': f'u{i}', 'cell_type': 'code', 'source': [f'v = {i}'], 'metadata': {}, 'outputs': [], 'execution_count': None} for i in range(3)]",
        "nb = {'nbformat': 4, 'nbformat_minor': 5, 'metadata': {'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}}, 'cells': cells}",
        "json.dump(nb, open(sys.argv[1], 'w'), indent=2)",
      ].join("\n"),
      path,
    ]);
    const original = await readFile(path, "utf8");
    const r = await call(dir, {
      action: "edit",
      notebook_path: "unsorted.ipynb",
      cell_index: 1,
      content: "v = 10",
    });
    assert.equal(r.isError, undefined, text(r));
    const after = await readFile(path, "utf8");
    const [a, b] = [original.split("\n"), after.split("\n")];
    const block = changedBlock(a, b);
    assert.ok(within(block.a, cellLineSpans(a, "  ")[1]), `changed ${block.a}`);
    assert.ok(within(block.b, cellLineSpans(b, "  ")[1]), `new ${block.b}`);
    assert.ok(after.startsWith('{\n  "nbformat": 4,'), "the frame keeps its key order");
    assert.ok((await oracle.check(path)).valid);
  });
});

/** A notebook as Colab saves it: indent 2, keys in Colab's own (unsorted) order, no final newline. */
const COLAB_NOTEBOOK = `{
  "nbformat": 4,
  "nbformat_minor": 0,
  "metadata": {
    "colab": {
      "provenance": []
    },
    "kernelspec": {
      "name": "python3",
      "display_name": "Python 3"
    },
    "language_info": {
      "name": "python"
    }
  },
  "cells": [
    {
      "cell_type": "markdown",
      "source": [
        "# Colab notebook"
      ],
      "metadata": {
        "id": "intro01"
      }
    },
    {
      "cell_type": "code",
      "source": [
        "x = 1\\n",
        "print(x)"
      ],
      "metadata": {
        "id": "code02",
        "colab": {
          "base_uri": "https://localhost:8080/"
        },
        "outputId": "7f3e2a10-0000-4000-8000-000000000001"
      },
      "execution_count": 1,
      "outputs": [
        {
          "output_type": "stream",
          "name": "stdout",
          "text": [
            "1\\n"
          ]
        }
      ]
    }
  ]
}`;

/** A fresh copy of the Colab notebook in a folder of its own. */
async function colabCopy() {
  const dir = await tempDir();
  const path = join(dir, "colab.ipynb");
  await writeFile(path, COLAB_NOTEBOOK);
  return { dir, path };
}

describe("a cell keeps its own key order (Colab)", () => {
  test("a one-line edit of a Colab cell changes exactly that line", async () => {
    const { dir, path } = await colabCopy();
    const r = await call(dir, {
      action: "edit",
      notebook_path: "colab.ipynb",
      cell_index: 1,
      content: "x = 2\nprint(x)",
    });
    assert.equal(r.isError, undefined, text(r));
    assert.match(
      text(r),
      /^Replaced cell 1 \(code; old source "x = 1" \(2 lines\)\)\. Notebook now has 2 cells\.$/,
    );
    const after = await readFile(path, "utf8");
    const a = COLAB_NOTEBOOK.split("\n");
    const b = after.split("\n");
    assert.equal(b.length, a.length, "no lines added or removed");
    const changed = a.flatMap((line, i) => (line === b[i] ? [] : [[line, b[i]]]));
    assert.deepEqual(changed, [['        "x = 1\\n",', '        "x = 2\\n",']]);
  });

  test("a key the edit adds goes after the cell's own keys; a new cell is written in nbformat's order", async () => {
    const { dir, path } = await colabCopy();
    const tags = await call(dir, {
      action: "tags",
      notebook_path: "colab.ipynb",
      cell_index: 0,
      add: ["intro"],
    });
    assert.equal(tags.isError, undefined, text(tags));
    const ins = await call(dir, {
      action: "insert",
      notebook_path: "colab.ipynb",
      cell_index: 2,
      content: "y = 3",
    });
    assert.equal(ins.isError, undefined, text(ins));
    const nb = JSON.parse(await readFile(path, "utf8"));
    assert.deepEqual(Object.keys(nb.cells[0]), ["cell_type", "source", "metadata"]);
    assert.deepEqual(Object.keys(nb.cells[0].metadata), ["id", "tags"]);
    assert.deepEqual(Object.keys(nb.cells[1]), [
      "cell_type",
      "source",
      "metadata",
      "execution_count",
      "outputs",
    ]);
    assert.deepEqual(Object.keys(nb.cells[2]), [
      "cell_type",
      "execution_count",
      "metadata",
      "outputs",
      "source",
    ]);
    assert.ok((await oracle.check(path)).valid);
  });

  test("bad input leaves a Colab file byte-identical", async () => {
    const { dir, path } = await colabCopy();
    const r = await call(dir, {
      action: "edit",
      notebook_path: "colab.ipynb",
      cell_id: "nope",
      content: "z",
    });
    assert.equal(r.isError, true);
    assert.match(text(r), /^Error: /);
    assert.equal(await readFile(path, "utf8"), COLAB_NOTEBOOK);
  });
});
