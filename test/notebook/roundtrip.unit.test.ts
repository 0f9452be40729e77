/**
 * Faithful files: on a corpus written by nbformat.write (unicode, floats, big ints, NaN,
 * attachments, every output type, 4.0/4.4/4.5, widgets, random nested metadata), load+save is
 * byte-identical, and an edit produces exactly the bytes Python's nbformat gives for the same edit
 * (so only that cell's lines change).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import {
  loadNotebook,
  parseJson,
  pyFloat,
  RawNumber,
  saveNotebook,
  serializeNotebook,
  serializeNotebookSlow,
} from "../../src/notebook/index.js";
import { call, makeCorpus, Oracle, PYTHON, tempDir, text } from "./helpers.js";

const run = promisify(execFile);
const HERE = new URL(".", import.meta.url).pathname;
let dir: string;
let names: string[];
let oracle: Oracle;

before(async () => {
  dir = await tempDir("nbagent-corpus-");
  names = await makeCorpus(dir, 16);
  oracle = new Oracle();
});
after(() => oracle.close());

describe("round trip", () => {
  test("every corpus file loads and saves byte-identical", async () => {
    assert.ok(names.length >= 20);
    for (const name of names) {
      const path = join(dir, name);
      const original = await readFile(path);
      const loaded = await loadNotebook(path);
      assert.equal(serializeNotebook(loaded.notebook), original.toString("utf8"), name);
      await saveNotebook(loaded);
      assert.deepEqual(await readFile(path), original, name);
    }
  });

  test("numbers are kept exactly as written", async () => {
    const rich = await readFile(join(dir, "rich-4.5.ipynb"), "utf8");
    for (const token of [
      "1.0",
      "1e-05",
      "-0.0",
      "1.5e+300",
      "12345678901234567890",
      "9007199254740993",
      "NaN",
      "-Infinity",
    ]) {
      assert.ok(rich.includes(token), `corpus has ${token}`);
    }
    const nb = parseJson(rich) as { metadata: { floats: unknown[]; ints: unknown[] } };
    assert.ok(nb.metadata.floats[0] instanceof RawNumber);
    assert.equal((nb.metadata.floats[0] as RawNumber).text, "1.0");
    assert.equal((nb.metadata.ints[2] as RawNumber).text, "12345678901234567890");
    assert.equal(nb.metadata.ints[1], -1, "safe integers stay plain numbers");
  });
});

describe("an edit changes only the edited cell", () => {
  test("our edit gives the same bytes as nbformat's edit, and only that cell's lines differ", async () => {
    const jobs: { src: string; dst: string; index: number; source: string; name: string }[] = [];
    for (const name of names) {
      const src = join(dir, name);
      const cells = (parseJson(await readFile(src, "utf8")) as { cells: unknown[] }).cells.length;
      if (cells === 0) continue;
      for (const index of new Set([0, Math.floor(cells / 2), cells - 1])) {
        const source = `edited ${index} ✓\nsecond line\r\nthird\u2028fourth\n`;
        jobs.push({ src, dst: join(dir, `py-${index}-${name}`), index, source, name });
      }
    }
    const jobFile = join(dir, "jobs.json");
    await writeFile(jobFile, JSON.stringify(jobs));
    await run(PYTHON, [join(HERE, "py_edit.py"), jobFile]);
    for (const job of jobs) {
      const ours = join(dir, `ts-${job.index}-${job.name}`);
      await copyFile(job.src, ours);
      const r = await call(dir, {
        action: "edit",
        notebook_path: ours,
        cell_index: job.index,
        content: job.source,
      });
      assert.equal(r.isError, undefined, text(r));
      const [mine, theirs, original] = await Promise.all([
        readFile(ours, "utf8"),
        readFile(job.dst, "utf8"),
        readFile(job.src, "utf8"),
      ]);
      assert.equal(mine, theirs, `${job.name} cell ${job.index}`);
      // The changed lines form one block inside that cell's "source" list.
      const a = original.split("\n");
      const b = mine.split("\n");
      let head = 0;
      while (head < a.length && a[head] === b[head]) head++;
      let tail = 0;
      while (tail < a.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
      const changed = b.slice(head, b.length - tail);
      assert.ok(
        changed.every((l) => /^ {3}"source": |^ {4}"|^ {3}\]/.test(l)),
        `${job.name}: only source lines changed: ${JSON.stringify(changed).slice(0, 300)}`,
      );
    }
    const verdicts = await Promise.all(
      jobs.slice(0, 20).map((j) => oracle.check(join(dir, `ts-${j.index}-${j.name}`))),
    );
    for (const v of verdicts) assert.ok(v.valid, v.error ?? "");
  });
});

describe("files not in nbformat.write's layout", () => {
  test("indent 2, unsorted keys, compact: our edit gives nbformat's notebook, in the file's own layout", async () => {
    const variants: Record<string, (nb: Record<string, unknown>) => string> = {
      indent2: (nb) => JSON.stringify(nb, null, 2),
      compact: (nb) => JSON.stringify(nb),
      unsorted: (nb) =>
        JSON.stringify(
          {
            nbformat_minor: nb.nbformat_minor,
            nbformat: nb.nbformat,
            metadata: nb.metadata,
            cells: nb.cells,
          },
          null,
          1,
        ),
    };
    const src = JSON.parse(await readFile(join(dir, "widgets.ipynb"), "utf8")) as Record<string, unknown>;
    const jobs = Object.entries(variants).map(([v, f]) => ({
      v,
      body: f(src),
      src: join(dir, `v-${v}.ipynb`),
      dst: join(dir, `vpy-${v}.ipynb`),
      index: 0,
      source: "new\nsource",
    }));
    for (const j of jobs) await writeFile(j.src, j.body);
    const jobFile = join(dir, "vjobs.json");
    await writeFile(jobFile, JSON.stringify(jobs));
    await run(PYTHON, [join(HERE, "py_edit.py"), jobFile]);
    for (const j of jobs) {
      const r = await call(dir, { action: "edit", notebook_path: j.src, cell_index: 0, content: j.source });
      assert.equal(r.isError, undefined, text(r));
      const [ours, theirs] = [await readFile(j.src, "utf8"), await readFile(j.dst, "utf8")];
      assert.deepEqual(JSON.parse(ours), JSON.parse(theirs), j.v);
      // The layout is the file's, not nbformat's (issue 8 item 16; docs/notebook-tool.md).
      assert.equal(ours.split("\n")[1]?.match(/^\s*/)?.[0], j.body.split("\n")[1]?.match(/^\s*/)?.[0], j.v);
      assert.equal(ours.includes("\n"), j.body.includes("\n"), j.v);
    }
  });

  test("repeated saves of one loaded notebook equal a full serialisation each time", async () => {
    const path = join(dir, "repeat.ipynb");
    await copyFile(join(dir, "rich-4.5.ipynb"), path);
    const loaded = await loadNotebook(path);
    for (let k = 0; k < 4; k++) {
      const { createCell, thawCell, setCellSource } = await import("../../src/notebook/index.js");
      setCellSource(thawCell(loaded.notebook, k), `round ${k}`);
      loaded.notebook.cells.splice(k, 0, createCell(loaded.notebook, "markdown", `inserted ${k}`));
      loaded.notebook.cells.push(loaded.notebook.cells.shift()!);
      await saveNotebook(loaded);
      assert.equal(await readFile(path, "utf8"), serializeNotebookSlow(loaded.notebook), `save ${k}`);
    }
    const fresh = await loadNotebook(path);
    assert.throws(
      () => {
        (fresh.notebook.cells[0].metadata as Record<string, unknown>).x = 1;
      },
      TypeError,
      "as-loaded cells are frozen: changes must go through thawCell",
    );
  });
});

describe("serialiser details against Python", () => {
  test("odd JSON (duplicate keys, index-like keys, NaN, big numbers) prints as Python's json.dumps", async () => {
    const texts = [
      '{"10": 1.0, "9": 2.5, "a": 1, "b": [1.5e+300, 0.0, -0.0]}',
      '{"a": "x", "b": 1.0, "a": 1}',
      '{"a": 1.5, "b": 2, "a": 3.25, "c": {"x": 1.0, "x": 2}}',
      '{"n": NaN, "i": -Infinity, "j": Infinity, "k": [1.0, 12345678901234567890123]}',
      '{"\\u00e9": 1, "e": 2.0, "\\ud83d\\ude00": 3.0, "\\uffff": 4}',
      '[1.0, {"2": 2.0, "1": 1.0}, "x\\u2028y", "\\u001f\\u007f"]',
    ];
    const child = execFile(PYTHON, [
      "-c",
      "import json,sys; print(json.dumps([json.dumps(json.loads(t), indent=1, sort_keys=True, ensure_ascii=False) + '\\n' for t in json.load(sys.stdin)]))",
    ]);
    const out: string[] = [];
    child.stdout!.on("data", (d) => out.push(String(d)));
    child.stdin!.end(JSON.stringify(texts));
    await new Promise((res) => child.on("close", res));
    const expected = JSON.parse(out.join("")) as string[];
    for (const [i, t] of texts.entries()) assert.equal(serializeNotebook(parseJson(t)), expected[i], t);
    // Where Python would normalise a number, nbagent keeps the text as written.
    assert.equal(serializeNotebook(parseJson("[1e5, -0, 1E-7]")), "[\n 1e5,\n -0,\n 1E-7\n]\n");
  });

  test("the native fast path and the general serialiser agree", async () => {
    for (const name of names) {
      const text = await readFile(join(dir, name), "utf8");
      assert.equal(serializeNotebook(parseJson(text)), serializeNotebookSlow(parseJson(text)), name);
    }
    // Unsorted keys, RawNumbers, floats and index-like keys built in JS.
    const made = () => ({
      z: 1,
      a: { y: [pyFloat(1), new RawNumber("1e-05"), "x"], b: true },
      "\uffff": 1,
      "\u{1f600}": 2,
      m: null,
    });
    assert.equal(serializeNotebook(made()), serializeNotebookSlow(made()));
    assert.match(serializeNotebook(made()), /\[\n {3}1\.0,\n {3}1e-05,/);
    const withFloat = { b: 0.1, a: -0.0, c: 2 ** 60 };
    assert.equal(serializeNotebook(withFloat), '{\n "a": 0,\n "b": 0.1,\n "c": 1152921504606846976\n}\n');
    const indexKeys = { "10": 1, "9": 2, a: 3 };
    assert.equal(serializeNotebook(indexKeys), '{\n "10": 1,\n "9": 2,\n "a": 3\n}\n');
  });

  test("float repr matches Python's repr for many doubles", async () => {
    const { pyFloatRepr } = await import("../../src/notebook/index.js");
    const values: number[] = [
      0.1,
      1 / 3,
      1e16,
      1e15,
      123456789012345680,
      5e-324,
      1.7976931348623157e308,
      1e-4,
      9.999e-5,
      0.5,
    ];
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 2000; i++) values.push((rnd() - 0.5) * 10 ** Math.floor(rnd() * 60 - 30));
    const child = execFile(PYTHON, [
      "-c",
      "import json,sys; print(json.dumps([repr(float.fromhex(x)) for x in json.load(sys.stdin)]))",
    ]);
    const out: string[] = [];
    child.stdout!.on("data", (d) => out.push(String(d)));
    const hex = values.map(toHex);
    child.stdin!.end(JSON.stringify(hex));
    await new Promise((res) => child.on("close", res));
    const expected = JSON.parse(out.join("")) as string[];
    for (const [i, v] of values.entries()) assert.equal(pyFloatRepr(v), expected[i], `value ${v}`);
  });
});

/** A double as Python's float.hex() text, so the exact bits reach Python. */
function toHex(x: number): string {
  const buf = Buffer.alloc(8);
  buf.writeDoubleBE(x);
  const bits = buf.readBigUInt64BE();
  const sign = bits >> 63n ? "-" : "";
  const exp = Number((bits >> 52n) & 0x7ffn);
  const mant = (bits & ((1n << 52n) - 1n)).toString(16).padStart(13, "0");
  if (exp === 0) return `${sign}0x0.${mant}p-1022`;
  return `${sign}0x1.${mant}p${exp - 1023}`;
}
