/**
 * `nbagent notebook` and `nbagent python` from a pipe (docs/cli.md): flags become the tool's
 * parameters, the answer is the tool's own text (or --json), bad input gets `Error:` or a usage
 * message and leaves the file byte-identical, and exit codes follow the result.
 */
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Json, nbagent, tempDir } from "./helpers.js";

describe("nbagent notebook", () => {
  let dir: string;
  let path: string;
  before(async () => {
    dir = await tempDir("nbagent-nbcli-");
    path = join(dir, "a.ipynb");
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("insert creates the notebook, run streams the cells' output, read lists them", async () => {
    const created = await nbagent(
      ["notebook", "insert", "a.ipynb", "--index", "0", "--content", "x = 41", "--kernel", "python3"],
      { cwd: dir },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stdout,
      /^Created a\.ipynb \(nbformat 4\.5, kernel python3: .*Inserted code cell at position 0 \(id \w+\)\. Notebook now has 1 cell\.\n$/,
    );
    await writeFile(join(dir, "cell.py"), "print(x + 1)\n");
    const second = await nbagent(
      ["notebook", "insert", "a.ipynb", "--index", "1", "--content-file", "cell.py"],
      {
        cwd: dir,
      },
    );
    assert.equal(second.code, 0, second.stderr);
    const run = await nbagent(["notebook", "run", "a.ipynb"], { cwd: dir });
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^\[cell 0 \(id \w+\)\]\n\(ok\)\n\[cell 1 \(id \w+\)\]\n42\nRan 2 of 2 code cells selected in a\.ipynb/,
    );
    const read = await nbagent(["notebook", "read", "a.ipynb", "--json"], { cwd: dir });
    assert.equal(read.code, 0, read.stderr);
    const result = JSON.parse(read.stdout) as Json;
    assert.equal(result.isError, false);
    assert.equal(result.details.totalCells, 2);
    assert.match(result.content[0].text, /## cell 1 · code · id \w+ · execution_count 2\nprint\(x \+ 1\)\n/);
  });

  it("replace, tags and raw cells through flags: the tool's text, the file changed as asked", async () => {
    const file = join(dir, "t.ipynb");
    const made = await nbagent(
      [
        "notebook",
        "insert",
        "t.ipynb",
        "--index",
        "0",
        "--content",
        "n = 10\nprint(n)",
        "--tag",
        "setup",
        "--tag",
        "slow",
      ],
      { cwd: dir },
    );
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /Tags: setup, slow\./);
    const raw = await nbagent(
      ["notebook", "insert", "t.ipynb", "--index", "1", "--type", "raw", "--content", "raw text"],
      {
        cwd: dir,
      },
    );
    assert.equal(raw.code, 0, raw.stderr);
    const replaced = await nbagent(
      ["notebook", "replace", "t.ipynb", "--index", "0", "--old", "n = 10", "--new", "n = 100"],
      {
        cwd: dir,
      },
    );
    assert.equal(replaced.code, 0, replaced.stderr);
    assert.match(replaced.stdout, /^Replaced 1 occurrence in cell 0 /);
    const tagged = await nbagent(
      ["notebook", "tags", "t.ipynb", "--index", "0", "--add", "skip-execution", "--remove", "slow"],
      {
        cwd: dir,
      },
    );
    assert.equal(tagged.code, 0, tagged.stderr);
    const nb = JSON.parse(await readFile(file, "utf8"));
    assert.equal([nb.cells[0].source].flat().join(""), "n = 100\nprint(n)");
    assert.deepEqual(nb.cells[0].metadata.tags, ["setup", "skip-execution"]);
    assert.equal(nb.cells[1].cell_type, "raw");
    const bad = await nbagent(["notebook", "insert", "t.ipynb", "--type", "sql"], { cwd: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--type must be code, markdown or raw, got sql/);
  });

  it("bad input: Error: from the tool (exit 1) or a usage message (exit 2); the file is unchanged", async () => {
    const before = await readFile(path);
    const outOfRange = await nbagent(["notebook", "edit", "a.ipynb", "--index", "7", "--content", "y"], {
      cwd: dir,
    });
    assert.equal(outOfRange.code, 1);
    assert.equal(outOfRange.stdout, "Error: Cell index 7 out of range (0-1) in a.ipynb\n");
    for (const args of [
      ["edit", "a.ipynb", "--index", "x", "--content", "y"],
      ["frobnicate", "a.ipynb"],
      ["edit", "a.ipynb", "--index", "0", "--content", "a", "--content-file", "cell.py"],
      ["insert", "a.ipynb", "--index", "0", "--content", "a", "--type", "sql"],
    ]) {
      const r = await nbagent(["notebook", ...args], { cwd: dir });
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, /^nbagent notebook: .+\nusage: nbagent notebook /);
    }
    assert.deepEqual(await readFile(path), before);
  });
  it("an edit of a Colab-written cell changes only the edited line (the cell keeps its key order)", async () => {
    const colab = join(dir, "colab.ipynb");
    const cell = (id: string, line: string) =>
      `    {\n      "cell_type": "code",\n      "source": [\n        "${line}"\n      ],\n      "metadata": {\n        "id": "${id}"\n      },\n      "execution_count": null,\n      "outputs": []\n    }`;
    const original = `{\n  "nbformat": 4,\n  "nbformat_minor": 0,\n  "metadata": {\n    "colab": {\n      "provenance": []\n    }\n  },\n  "cells": [\n${cell("a1", "x = 1")},\n${cell("b2", "y = 2")}\n  ]\n}`;
    await writeFile(colab, original);
    const r = await nbagent(["notebook", "edit", "colab.ipynb", "--index", "1", "--content", "y = 3"], {
      cwd: dir,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Replaced cell 1 (code; old source "y = 2"). Notebook now has 2 cells.\n');
    const after = (await readFile(colab, "utf8")).split("\n");
    const before = original.split("\n");
    assert.equal(after.length, before.length);
    assert.deepEqual(
      before.flatMap((line, i) => (line === after[i] ? [] : [[line, after[i]]])),
      [['        "y = 2"', '        "y = 3"']],
    );
  });
  it("an nbformat 3 notebook: read leaves it as it is, an edit saves it as 4.5; the text says which", async () => {
    const old = join(dir, "v3.ipynb");
    const v3 = JSON.stringify({
      metadata: { name: "v3" },
      nbformat: 3,
      nbformat_minor: 0,
      worksheets: [
        { metadata: {}, cells: [{ cell_type: "heading", level: 2, metadata: {}, source: "Old" }] },
      ],
    });
    await writeFile(old, v3);
    const read = await nbagent(["notebook", "read", "v3.ipynb"], { cwd: dir });
    assert.equal(read.code, 0, read.stderr);
    assert.match(read.stdout, /## cell 0 · markdown · id [0-9a-f]{8}\n## Old\n/);
    assert.match(
      read.stdout,
      /\n\nNote: v3\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, for this call only: the file is unchanged \(a change to it saves it as 4\.5\)\.\n$/,
    );
    assert.equal(await readFile(old, "utf8"), v3);
    const edit = await nbagent(["notebook", "edit", "v3.ipynb", "--index", "0", "--content", "## New"], {
      cwd: dir,
    });
    assert.equal(edit.code, 0, edit.stderr);
    assert.match(
      edit.stdout,
      /^Replaced cell 0 \(markdown, id [0-9a-f]{8}; old source [^)]*\)\. Notebook now has 1 cell\.\n\nNote: v3\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, and saved as 4\.5\.\n$/,
    );
    const nb = JSON.parse(await readFile(old, "utf8"));
    assert.deepEqual([nb.nbformat, nb.nbformat_minor, nb.cells[0].source], [4, 5, ["## New"]]);
    // A run saves its outputs, so it writes 4.5 too.
    const code = join(dir, "v3code.ipynb");
    await writeFile(
      code,
      JSON.stringify({
        metadata: {},
        nbformat: 3,
        nbformat_minor: 0,
        worksheets: [{ cells: [{ cell_type: "code", metadata: {}, input: ["print(6 * 7)"], outputs: [] }] }],
      }),
    );
    const ran = await nbagent(["notebook", "run", "v3code.ipynb", "--json"], { cwd: dir });
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(
      (JSON.parse(ran.stdout) as Json).content[0].text,
      /^Ran 1 of 1 code cell selected in v3code\.ipynb [^\n]*\n\[cell 0 \(id [0-9a-f]{8}\)\]\n42\n\nNote: v3code\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, and saved as 4\.5\.$/,
    );
    const saved = JSON.parse(await readFile(code, "utf8"));
    assert.deepEqual(
      [saved.nbformat, saved.nbformat_minor, saved.cells[0].outputs[0].text],
      [4, 5, ["42\n"]],
    );
  });
});

describe("nbagent python from a pipe", () => {
  it("-c prints the model's text; a failing cell exits 1; --json is the result object", async () => {
    const ok = await nbagent(["python", "-c", "print(6 * 7)"]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, "42\n");
    const failed = await nbagent(["python", "-c", "1/0"]);
    assert.equal(failed.code, 1);
    assert.match(
      failed.stdout,
      /ZeroDivisionError: division by zero\nCell 1 failed: ZeroDivisionError: division by zero\.\n$/,
    );
    const json = await nbagent(["python", "--json"], { input: "x = 2\nx ** 10" });
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as Json;
    assert.equal(result.content[0].text, "1024");
    assert.equal(result.details.cells[0].status, "ok");
  });

  it("usage errors exit 2 before any kernel starts", async () => {
    for (const args of [["-c", "1", "file.py"], ["--timeout", "0", "-c", "1"], ["missing-file.py"]]) {
      const r = await nbagent(["python", ...args]);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, /^nbagent python: .+\nusage: nbagent python /);
    }
  });
});
