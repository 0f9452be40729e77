/**
 * Malformed input, many generated cases: every one gives an `Error:` result and leaves the file
 * (and its directory) byte-identical. Random byte-level mutations of a real notebook either fail
 * cleanly or, when the mutant is still a valid notebook, produce a valid notebook.
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { serializeNotebook } from "../../src/notebook/index.js";
import { createToolbox } from "../../src/tools/index.js";
import { testSettings } from "../settings.js";
import { call, Oracle, tempDir, text, writeNotebook } from "./helpers.js";

let oracle: Oracle;
before(() => {
  oracle = new Oracle();
});
after(() => oracle.close());

let seed = 7;
function rnd(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return Math.floor((seed / 2 ** 31) * n);
}

const cell = {
  cell_type: "code",
  id: "a1",
  metadata: {},
  source: ["x = 1"],
  execution_count: null,
  outputs: [],
};
const nbWith = (cells: unknown, extra: object = {}) =>
  serializeNotebook({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5, ...extra });

/** Files that must be refused, whatever the action. */
function badFiles(valid: string): [string, string | Buffer][] {
  const files: [string, string | Buffer][] = [
    ["empty", ""],
    ["space", "   \n"],
    ["not-json", "this is not json"],
    ["html", "<html><body>404</body></html>"],
    ["array", "[]"],
    ["string", '"cells"'],
    ["number", "42"],
    ["nan", "NaN"],
    ["null", "null"],
    ["bom", `\ufeff${valid}`],
    ["trailing-garbage", `${valid}}`],
    ["cells-object", nbWith({})],
    ["cells-string", nbWith("x")],
    ["cells-null", nbWith(null)],
    ["cells-number", nbWith(3)],
    ["no-cells", serializeNotebook({ metadata: {}, nbformat: 4, nbformat_minor: 5 })],
    [
      "v3-worksheets-not-a-list",
      serializeNotebook({ worksheets: { cells: [] }, metadata: {}, nbformat: 3, nbformat_minor: 0 }),
    ],
    ["v5", nbWith([cell], { nbformat: 5 })],
    ["cell-number", nbWith([cell, 1])],
    ["cell-string", nbWith([cell, "code"])],
    ["cell-null", nbWith([null, cell])],
    ["cell-array", nbWith([[cell]])],
    ["cell-empty-object", nbWith([cell, {}])],
    ["cell-type-number", nbWith([{ ...cell, cell_type: 1 }])],
    ["source-number", nbWith([{ ...cell, source: 5 }])],
    ["source-mixed-list", nbWith([{ ...cell, source: ["a", 1] }])],
    ["source-missing", nbWith([{ cell_type: "markdown", metadata: {} }])],
    ["outputs-object", nbWith([{ ...cell, outputs: {} }])],
    ["outputs-of-strings", nbWith([{ ...cell, outputs: ["x"] }])],
    ["metadata-list", nbWith([{ ...cell, metadata: [] }])],
    ["id-number", nbWith([{ ...cell, id: 5 }])],
    ["nb-metadata-list", nbWith([cell], { metadata: [] })],
    ["key-number", valid.replace('"nbformat": 4', "1.5: 4")],
    ["binary-png", Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108020000", "hex")],
    [
      "invalid-utf8",
      Buffer.concat([
        Buffer.from(valid.slice(0, 40)),
        Buffer.from([0xff, 0xfe, 0x80]),
        Buffer.from(valid.slice(40)),
      ]),
    ],
  ];
  // Truncations at many points (any prefix of an object-rooted document before its last brace).
  const last = valid.lastIndexOf("}");
  for (let i = 0; i < 40; i++) files.push([`truncated-${i}`, valid.slice(0, rnd(last))]);
  for (let i = 0; i < 10; i++)
    files.push([`random-bytes-${i}`, Buffer.from(Array.from({ length: rnd(200) }, () => rnd(256)))]);
  return files;
}

const ACTIONS: Record<string, unknown>[] = [
  { action: "edit", cell_index: 0, content: "y" },
  { action: "insert", cell_index: 0, content: "y" },
  { action: "delete", cell_index: 0 },
  { action: "move", cell_index: 0, to_index: 0 },
  { action: "clear_outputs" },
  { action: "read" },
];

/** Parameters that must be refused on a good notebook with 3 cells. */
function badParams(): Record<string, unknown>[] {
  const indices = [
    -1,
    -0.5,
    0.5,
    2.000001,
    3,
    4,
    1e300,
    -1e300,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    "NaN",
    "0",
    "",
    null,
    true,
    [],
    {},
  ];
  const out: Record<string, unknown>[] = [];
  for (const cell_index of indices) {
    out.push({ action: "edit", cell_index, content: "x" });
    out.push({ action: "delete", cell_index });
    out.push({ action: "move", cell_index, to_index: 0 });
    out.push({ action: "move", cell_index: 0, to_index: cell_index });
    if (cell_index !== 3) out.push({ action: "insert", cell_index, content: "x" });
    out.push({ action: "read", offset: cell_index });
  }
  for (const action of ["", "EDIT", "remove", "run", null, 5, undefined, ["edit"]]) {
    out.push({ action, cell_index: 0, content: "x" });
  }
  out.push({ action: "edit", cell_index: 0, cell_id: "cell-0", content: "x" });
  out.push({ action: "edit", content: "x" });
  out.push({ action: "delete" });
  out.push({ action: "edit", cell_id: "missing", content: "x" });
  out.push({ action: "edit", cell_id: 0, content: "x" });
  for (const content of [undefined, null, 5, ["a"], { a: 1 }]) {
    out.push({ action: "edit", cell_index: 0, content });
    out.push({ action: "insert", cell_index: 0, content });
  }
  // "raw" is a cell type the tool takes (docs/notebook-tool.md); its capitalised form is not.
  for (const cell_type of ["Raw", "python", 5, null])
    out.push({ action: "insert", cell_index: 0, content: "x", cell_type });
  for (const tags of [["a", "a"], [""], "a", [1], null, {}])
    out.push({ action: "edit", cell_index: 0, content: "x", tags });
  for (const add of [["a", "a"], [""], "a", [1], null]) out.push({ action: "tags", cell_index: 0, add });
  out.push({ action: "tags", cell_index: 0 });
  out.push({ action: "tags", cell_index: 0, add: ["a"], remove: ["a"] });
  out.push({ action: "tags", add: ["a"] });
  out.push({ action: "edit", cell_index: 0, content: "x", execute: true });
  return out;
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for (const name of (await readdir(dir)).sort()) {
    const p = join(dir, name);
    const st = await stat(p);
    m.set(name, st.isFile() ? `${st.mtimeMs}:${(await readFile(p)).toString("base64")}` : "dir");
  }
  return m;
}

describe("malformed files", () => {
  test("every action on every malformed file is an Error: and changes nothing", async () => {
    const dir = await tempDir();
    const valid = await readFile(await writeNotebook(join(dir, "valid.ipynb"), [{ source: "x" }]), "utf8");
    await mkdir(join(dir, "folder.ipynb"));
    const files = badFiles(valid);
    for (const [name, body] of files) await writeFile(join(dir, `${name}.ipynb`), body);
    const before = await snapshot(dir);
    let cases = 0;
    for (const name of [...files.map(([n]) => n), "folder", "does-not-exist"]) {
      for (const params of ACTIONS) {
        // insert at 0 into a missing path creates the notebook (tested in create.test.ts).
        if (name === "does-not-exist" && params.action === "insert") continue;
        const r = await call(dir, { ...params, notebook_path: `${name}.ipynb` });
        assert.equal(r.isError, true, `${name} ${JSON.stringify(params)} → ${text(r)}`);
        assert.match(text(r), /^Error: /);
        cases++;
      }
    }
    assert.deepEqual(await snapshot(dir), before, "no file (and no temp or lock file) changed");
    assert.ok(cases > 500, `${cases} cases`);
  });
});

describe("malformed parameters", () => {
  test("every bad parameter set on a good notebook is an Error: and changes nothing", async () => {
    const dir = await tempDir();
    await writeNotebook(join(dir, "nb.ipynb"), [
      { source: "a" },
      { source: "b", type: "markdown" },
      { source: "c" },
    ]);
    const before = await snapshot(dir);
    const all = badParams();
    for (const params of all) {
      const r = await call(dir, { notebook_path: "nb.ipynb", ...params });
      assert.equal(r.isError, true, `${JSON.stringify(params)} → ${text(r)}`);
      assert.match(text(r), /^Error: \S/);
    }
    for (const notebook_path of [undefined, null, "", 5, ["nb.ipynb"]]) {
      const r = await call(dir, { action: "read", notebook_path });
      assert.match(text(r), /^Error: notebook_path is required/);
    }
    assert.deepEqual(await snapshot(dir), before);
    assert.ok(all.length > 100, `${all.length} cases`);
  });
});

/** Parameter sets the schema check must refuse, for a tool that can run cells (issue 8 item 7). */
function badSchemaParams(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const numbers = [-5, 0, -0.001, "10", "", null, true, [], {}, Number.NaN, Number.POSITIVE_INFINITY, -1e300];
  for (const timeout of numbers) {
    out.push({ action: "run", timeout });
    out.push({ action: "run", cell_index: 0, timeout });
    out.push({ action: "edit", cell_index: 0, content: "x", execute: true, timeout });
    out.push({ action: "insert", cell_index: 0, content: "x", execute: true, timeout });
  }
  for (const flag of ["yes", "true", 1, 0, null, [], {}, "false"]) {
    out.push({ action: "edit", cell_index: 0, content: "x", execute: flag });
    out.push({ action: "insert", cell_index: 1, content: "x", execute: flag });
    out.push({ action: "run", allow_errors: flag });
    out.push({ action: "run", all: flag });
  }
  for (const cell_range of [
    [],
    [0],
    [0, 1, 2],
    ["0", 1],
    [1.5, 2],
    [-1, 2],
    [2, 1],
    "0-2",
    { 0: 0, 1: 1 },
    null,
  ]) {
    out.push({ action: "run", cell_range });
  }
  out.push({ action: "run", cell_range: [0, 1], cell_index: 0 });
  out.push({ action: "run", all: true, cell_index: 0 });
  out.push({ action: "edit", cell_index: 0, content: "x", cell_range: [0, 1] });
  for (const limit of [0, -1, 1.5, "2", null]) out.push({ action: "read", limit });
  const unknownKeys = [
    "source",
    "code",
    "text",
    "index",
    "path",
    "id",
    "type",
    "foo",
    "cellIndex",
    "notebookPath",
    "",
  ];
  for (const action of ["edit", "insert", "delete", "read", "move", "clear_outputs", "run"]) {
    const base: Record<string, unknown> = { action, cell_index: 0, to_index: 0, content: "x" };
    if (action !== "edit" && action !== "insert") delete base.content;
    if (action !== "move") delete base.to_index;
    for (const key of unknownKeys) out.push({ ...base, [key]: 1 });
    out.push({ ...base, ...JSON.parse('{"__proto__": {"x": 1}}') });
  }
  for (const action of [
    "delet",
    "insrt",
    "Run",
    "clear",
    "execute",
    "remove",
    "create",
    "write",
    " edit",
    "edit ",
  ]) {
    out.push({ action, cell_index: 0, content: "x" });
  }
  // Parameters that belong to another action.
  out.push({ action: "read", content: "x" });
  out.push({ action: "delete", cell_index: 0, content: "x" });
  out.push({ action: "move", cell_index: 0, to_index: 1, content: "x" });
  out.push({ action: "delete", cell_index: 0, execute: true });
  out.push({ action: "edit", cell_index: 0, content: "x", to_index: 2 });
  out.push({ action: "edit", cell_index: 0, content: "x", timeout: 5 });
  out.push({ action: "edit", cell_index: 0, content: "x", allow_errors: true });
  out.push({ action: "clear_outputs", offset: 1 });
  out.push({ action: "run", limit: 1 });
  out.push({ action: "read", cell_id: "cell-0", offset: 0 });
  return out;
}

describe("malformed parameters with a kernel runtime", () => {
  test("every schema violation is an Error:, starts no kernel and changes nothing", async () => {
    const dir = await tempDir();
    await writeNotebook(join(dir, "nb.ipynb"), [
      {
        source: "print('saved')",
        execution_count: 3,
        outputs: [{ output_type: "stream", name: "stdout", text: ["saved\n"] }],
      },
      { source: "b", type: "markdown" },
      { source: "c" },
    ]);
    const toolbox = createToolbox({ settings: testSettings(), cwd: dir });
    try {
      const tool = toolbox.tools.find((t) => t.name === "notebook")!;
      const before = await snapshot(dir);
      // badParams() without the calls that are valid when cells can run.
      const valid = (p: Record<string, unknown>) => p.action === "run" || p.execute === true;
      const all = [...badParams().filter((p) => !valid(p)), ...badSchemaParams()];
      for (const params of all) {
        const r = await tool.execute("fuzz", { notebook_path: "nb.ipynb", ...params });
        assert.equal(r.isError, true, `${JSON.stringify(params)} → ${text(r)}`);
        assert.match(text(r), /^Error: \S/);
      }
      assert.deepEqual(await snapshot(dir), before);
      assert.deepEqual(toolbox.runtime.sessions.keys(), [], "no kernel was started");
      assert.ok(all.length > 250, `${all.length} cases`);
    } finally {
      await toolbox.dispose();
    }
  });
});

describe("random mutations of a real notebook", () => {
  test("either a clean Error with the file untouched, or a valid notebook stays valid", async () => {
    const dir = await tempDir();
    const base = await readFile(
      await writeNotebook(join(dir, "base.ipynb"), [
        {
          source: "import math\nmath.pi",
          execution_count: 1,
          outputs: [
            {
              output_type: "execute_result",
              execution_count: 1,
              data: { "text/plain": ["3.14"] },
              metadata: {},
            },
          ],
        },
        { source: "# T", type: "markdown" },
      ]),
      "utf8",
    );
    const alphabet = ['"', "{", "}", "[", "]", ",", ":", "\\", "1", ".", "e", "-", " ", "\n", "x", "\u0000"];
    let errors = 0;
    let edits = 0;
    for (let i = 0; i < 120; i++) {
      let mutant = base;
      for (let k = 0; k <= rnd(3); k++) {
        const at = rnd(mutant.length);
        const op = rnd(3);
        if (op === 0) mutant = mutant.slice(0, at) + mutant.slice(at + 1);
        else if (op === 1) mutant = mutant.slice(0, at) + alphabet[rnd(alphabet.length)] + mutant.slice(at);
        else mutant = mutant.slice(0, at) + alphabet[rnd(alphabet.length)] + mutant.slice(at + 1);
      }
      const path = join(dir, `m${i}.ipynb`);
      await writeFile(path, mutant);
      const wasValid = (await oracle.check(path)).valid;
      const r = await call(dir, {
        action: "edit",
        notebook_path: `m${i}.ipynb`,
        cell_index: 1,
        content: "## ok",
      });
      if (r.isError) {
        errors++;
        assert.match(text(r), /^Error: /);
        assert.equal(await readFile(path, "utf8"), mutant);
      } else {
        edits++;
        if (wasValid) {
          const v = await oracle.check(path);
          assert.ok(v.valid, `mutant ${i} was valid, result is not: ${v.error}`);
        }
      }
    }
    assert.ok(errors > 20 && edits > 5, `errors ${errors}, edits ${edits}`);
  });
});
