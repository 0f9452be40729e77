/**
 * The byte scan and the deferred decode behind every load: the scan accepts exactly what the full
 * parser (JSON.parse plus Python's NaN/Infinity) accepts, over hand-picked edge cases and thousands
 * of random mutations; a deferred load equals a full parse, field for field and byte for byte when
 * serialised, and leaves other cells' outputs unparsed until they are read.
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { decodeJson } from "../../src/notebook/decode.js";
import {
  assertNotebook,
  isDeferred,
  type Notebook,
  parseJson,
  serializeNotebook,
  thawCell,
} from "../../src/notebook/index.js";
import { scanJsonBytes } from "../../src/notebook/scan.js";
import { makeCorpus, tempDir } from "./helpers.js";

function fullParseOk(text: string): boolean {
  try {
    parseJson(text);
    return true;
  } catch {
    return false;
  }
}

function scanOk(buf: Buffer): boolean {
  try {
    scanJsonBytes(buf);
    return true;
  } catch (e) {
    assert.ok(e instanceof SyntaxError, String(e));
    return false;
  }
}

const EDGE = [
  "0",
  "-0",
  "1.5e-7",
  "1E+2",
  "01",
  "1.",
  ".5",
  "-",
  "--1",
  "1e",
  "+1",
  "0x10",
  "1_000",
  "NaN",
  "-NaN",
  "Infinity",
  "-Infinity",
  "infinity",
  "nan",
  '""',
  '"\\u00e9"',
  '"\\u00g9"',
  '"\\x41"',
  '"\\/"',
  '"\\',
  '"a\tb"',
  '"a\u007fb"',
  '"\\ud800"',
  "[]",
  "[1,]",
  "[,1]",
  "[1 2]",
  "{}",
  '{"a":1,}',
  '{"a" 1}',
  "{a:1}",
  '{"a":1}}',
  "[[[[]]]]",
  "[[[[]]]",
  "true",
  "tru",
  "True",
  "null",
  "nul",
  " \t\r\n[ 1 ]\n ",
  "\u00a0[]",
  "[]\u0000",
  "\ufeff[]",
  "",
  '{"cells":[{"outputs":[{}],"outputs":[]}]}',
  '{"cells":[1,{"a":2}]}',
  '{"cells":{"x":[]}}',
  '{"cells":[{"outputs":{}}]}',
  '{"cells":[{"outputs":[1]}]}',
  '{"cells":[{"attachments":[]}]}',
];

describe("byte scan", () => {
  test("accepts exactly what the full parser accepts: edge cases", () => {
    for (const text of EDGE) {
      assert.equal(scanOk(Buffer.from(text)), fullParseOk(text), JSON.stringify(text));
    }
  });

  test("accepts exactly what the full parser accepts: 20,000 random mutations of a notebook", () => {
    const base = serializeNotebook({
      cells: [
        {
          cell_type: "code",
          execution_count: 3,
          id: "x1",
          metadata: { tags: ["a"], f: 1.5e-7 },
          outputs: [
            { name: "stdout", output_type: "stream", text: ['é "q" \\ 日本\n', "tab\there\n"] },
            {
              data: { "text/plain": ["1.0"] },
              execution_count: 3,
              metadata: {},
              output_type: "execute_result",
            },
          ],
          source: ["print('hi')\n", "x = [1, -2.5, 1e10, true, null]"],
        },
        {
          attachments: { "a.png": { "image/png": "iVBOR" } },
          cell_type: "markdown",
          id: "m",
          metadata: {},
          source: "![a](attachment:a.png)",
        },
      ],
      metadata: { n: -0 },
      nbformat: 4,
      nbformat_minor: 5,
    });
    const alphabet = '{}[],:"\\ \n\t0123456789.-+eENaIfinytrulsx\u0001\u00e9';
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n);
    };
    let accepted = 0;
    for (let k = 0; k < 20_000; k++) {
      let text = base;
      for (let m = 1 + rnd(3); m > 0; m--) {
        const at = rnd(text.length + 1);
        const ch = alphabet[rnd(alphabet.length)];
        const op = rnd(3);
        text =
          op === 0
            ? text.slice(0, at) + ch + text.slice(at)
            : op === 1
              ? text.slice(0, at) + text.slice(at + 1)
              : text.slice(0, at) + ch + text.slice(at + 1);
      }
      const ok = fullParseOk(text);
      if (ok) accepted++;
      assert.equal(scanOk(Buffer.from(text)), ok, JSON.stringify(text));
    }
    // Both verdicts occur often enough for the comparison to mean something.
    assert.ok(accepted > 1000 && accepted < 19_000, `accepted ${accepted}`);
  });

  test("locates each cell and its outputs/attachments by byte, through multi-byte text", () => {
    const text = serializeNotebook({
      cells: [
        {
          cell_type: "markdown",
          metadata: {},
          source: "日本 é",
          attachments: { "x.png": { "image/png": "AA" } },
        },
        {
          cell_type: "code",
          execution_count: null,
          metadata: {},
          outputs: [{ output_type: "stream", name: "stdout", text: "ü" }],
          source: "",
        },
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 4,
    });
    const buf = Buffer.from(text);
    const { cells, bulkOk } = scanJsonBytes(buf);
    assert.equal(bulkOk, true);
    assert.equal(cells?.length, 2);
    const slice = (s: number, e: number) => buf.toString("utf8", s, e);
    assert.deepEqual(JSON.parse(slice(cells![0].start, cells![0].end)).source, "日本 é");
    assert.deepEqual(
      cells![0].bulk.map((f) => f.key),
      ["attachments"],
    );
    assert.deepEqual(JSON.parse(slice(cells![0].bulk[0].start, cells![0].bulk[0].end)), {
      "x.png": { "image/png": "AA" },
    });
    assert.deepEqual(JSON.parse(slice(cells![1].bulk[0].start, cells![1].bulk[0].end))[0].text, "ü");
  });
});

describe("deferred decode", () => {
  let dir: string;
  let names: string[];
  before(async () => {
    dir = await tempDir("nbagent-scan-");
    names = await makeCorpus(dir, 8);
  });

  test("equals a full parse on every corpus notebook (serialised byte for byte)", async () => {
    let deferred = 0;
    for (const name of names) {
      const buf = await readFile(join(dir, name));
      const { value } = decodeJson(buf);
      const full = parseJson(buf.toString("utf8"));
      assert.equal(serializeNotebook(value), serializeNotebook(full), name);
      assertNotebook(value);
      if (value.cells.some((c) => isDeferred(c, "outputs") || isDeferred(c, "attachments"))) deferred++;
    }
    assert.ok(deferred > names.length / 2, `${deferred} of ${names.length} notebooks were decoded deferred`);
    assert.ok((await readdir(dir)).length >= names.length);
  });

  test("outputs stay bytes until read, then parse once, frozen; thawing copies them", () => {
    const text = serializeNotebook({
      cells: [0, 1].map((i) => ({
        cell_type: "code",
        execution_count: i,
        id: `c${i}`,
        metadata: {},
        outputs: [
          {
            data: { "text/plain": "1.0" },
            execution_count: i,
            metadata: { x: 1.0 },
            output_type: "execute_result",
          },
        ],
        source: `${i}`,
      })),
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    }).replace('"x": 1', '"x": 1.0');
    const nb = decodeJson(Buffer.from(text)).value as Notebook;
    // The getter takes the placeholder's place: the key order (and so the bytes written) is unchanged.
    assert.equal(Object.keys(nb.cells[0]).join(" "), "cell_type execution_count id metadata outputs source");
    assert.ok(isDeferred(nb.cells[0], "outputs") && Object.isFrozen(nb.cells[0]));
    const outputs = nb.cells[1].outputs as unknown[];
    assert.equal(nb.cells[1].outputs, outputs, "parsed once");
    assert.ok(Object.isFrozen(outputs) && Object.isFrozen(outputs[0]));
    assert.throws(() => {
      (outputs as unknown[]).push(1);
    });
    const thawed = thawCell(nb, 1);
    assert.ok(!isDeferred(thawed, "outputs"));
    (thawed.outputs as unknown[]).push({ output_type: "stream", name: "stdout", text: "more" });
    assert.equal((nb.cells[1].outputs as unknown[]).length, 2);
    assert.equal(
      serializeNotebook(nb).includes('"x": 1.0'),
      true,
      "numbers inside deferred outputs stay as written",
    );
  });
});
