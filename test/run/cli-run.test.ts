/**
 * `nbagent run` as a command: exit codes (a failing cell, --allow-errors, raises-exception), where
 * the results go (in place, -o FILE, -o DIR with several notebooks), and usage errors (exit 2).
 */
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCommand } from "../../src/cli/run-command.js";
import { testSettings } from "../settings.js";
import { type Json, nbagent, outputTexts, perTestDirs, readNb, validate, writeNb } from "./helpers.js";

/** Runs fn with process.stderr.write captured until fn's promise settles. */
async function captureStderr(fn: () => Promise<number>): Promise<{ code: number; stderr: string }> {
  let stderr = "";
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await fn(), stderr };
  } finally {
    process.stderr.write = write;
  }
}

const FAILING: Parameters<typeof writeNb>[1] = [
  ["code", "print('one')"],
  ["code", "1/0"],
  ["code", "print('three')"],
];
const texts = outputTexts;

describe("nbagent run", { concurrency: true }, () => {
  const dir = perTestDirs();

  it("a failing cell: exit 1, later cells not run, the file (in place) holds the error", async () => {
    const path = await writeNb(join(await dir(), "fail.ipynb"), FAILING);
    const r = await nbagent(["run", path]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /cell 1 error [\d.]+s: ZeroDivisionError: division by zero\n/);
    assert.match(r.stderr, /1 failed; stopped: cell 1 failed/);
    // The failing cell, its source and its traceback, as nbclient's CellExecutionError shows them;
    // stderr is not a terminal here, so without colour codes.
    assert.match(
      r.stderr,
      /fail\.ipynb: cell 1 \(id c1\) failed: it raised an error; the notebook stopped there\.\n-{18}\n1\/0\n-{18}\n\n-+\nZeroDivisionError +Traceback \(most recent call last\)\n[\s\S]*\nZeroDivisionError: division by zero\n/,
    );
    assert.equal(r.stderr.includes("\x1b["), false, "no ANSI codes when stderr is not a terminal");
    const nb = await readNb(path);
    assert.deepEqual(texts(nb), [["one\n"], ["!ZeroDivisionError"], []]);
    assert.deepEqual(
      nb.cells.map((c: Json) => c.execution_count),
      [1, 2, null],
    );
    assert.equal(await validate(path), "ok");
  });

  it("--allow-errors: exit 0 and every cell runs", async () => {
    const path = await writeNb(join(await dir(), "fail.ipynb"), FAILING);
    const r = await nbagent(["run", "--allow-errors", "--quiet", path]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(texts(await readNb(path)), [["one\n"], ["!ZeroDivisionError"], ["three\n"]]);
  });

  it("raises-exception is expected: exit 0 without --allow-errors; skip-execution untouched", async () => {
    const path = await writeNb(join(await dir(), "tags.ipynb"), [
      ["code", "print('skipped')", ["skip-execution"]],
      ["code", "raise RuntimeError('expected')", ["raises-exception"]],
      ["code", "print('after')"],
    ]);
    const r = await nbagent(["run", path]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(texts(await readNb(path)), [[], ["!RuntimeError"], ["after\n"]]);
  });

  it("several notebooks into -o DIR; inputs untouched; one failing notebook fails the command", async () => {
    const d = await dir();
    const out = join(d, "out");
    await mkdir(out);
    const a = await writeNb(join(d, "a.ipynb"), [["code", "print('a')"]]);
    const b = await writeNb(join(d, "b.ipynb"), FAILING);
    const c = await writeNb(join(d, "c.ipynb"), [
      ["code", "import os\nprint(os.path.basename(os.getcwd()))"],
    ]);
    const before = await Promise.all([a, b, c].map((p) => readFile(p)));
    const r = await nbagent(["run", "-o", out, a, b, c]);
    assert.equal(r.code, 1, r.stderr);
    const after = await Promise.all([a, b, c].map((p) => readFile(p)));
    for (const [i, buf] of after.entries()) assert.ok(buf.equals(before[i]), `input ${i} changed`);
    assert.deepEqual(texts(await readNb(join(out, "a.ipynb"))), [["a\n"]], r.stderr);
    assert.deepEqual(
      texts(await readNb(join(out, "b.ipynb"))),
      [["one\n"], ["!ZeroDivisionError"], []],
      r.stderr,
    );
    // The kernel's cwd is the input notebook's directory (as nbclient), not the output's.
    assert.deepEqual(texts(await readNb(join(out, "c.ipynb"))), [[`${d.split("/").pop()}\n`]]);
    for (const name of ["a.ipynb", "b.ipynb", "c.ipynb"]) assert.equal(await validate(join(out, name)), "ok");
  });

  it("-o FILE for one notebook; --prestart 0 and 2 give the same files", async () => {
    const d = await dir();
    const a = await writeNb(join(d, "a.ipynb"), [
      ["code", "print('a')"],
      ["markdown", "*m*"],
    ]);
    const before = await readFile(a);
    const r = await nbagent(["run", "-o", join(d, "result.ipynb"), "--prestart", "0", a]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok((await readFile(a)).equals(before));
    assert.deepEqual(texts(await readNb(join(d, "result.ipynb"))), [["a\n"], []]);
    const out2 = join(d, "two");
    await mkdir(out2);
    const b = await writeNb(join(d, "b.ipynb"), [["code", "print('b')"]]);
    const c = await writeNb(join(d, "c.ipynb"), [["code", "print('c')"]]);
    const r2 = await nbagent(["run", "--quiet", "--prestart", "2", "-o", out2, a, b, c]);
    assert.equal(r2.code, 0, r2.stderr);
    assert.deepEqual(texts(await readNb(join(out2, "b.ipynb"))), [["b\n"]]);
    assert.deepEqual(texts(await readNb(join(out2, "c.ipynb"))), [["c\n"]]);
    assert.deepEqual(
      (await readFile(join(out2, "a.ipynb"), "utf8")).replace(/"(iopub|shell)[^"]*": "[^"]*"/g, ""),
      (await readFile(join(d, "result.ipynb"), "utf8")).replace(/"(iopub|shell)[^"]*": "[^"]*"/g, ""),
    );
  });

  it("a kernel that dies and a cell that times out stop their notebook, not the next one", async () => {
    const d = await dir();
    const out = join(d, "out");
    await mkdir(out);
    const died = await writeNb(join(d, "died.ipynb"), [
      ["code", "print('before')"],
      ["code", "import os\nos._exit(3)"],
      ["code", "print('never')"],
    ]);
    const slow = await writeNb(join(d, "slow.ipynb"), [
      ["code", "import time\ntime.sleep(60)"],
      ["code", "print('never')"],
    ]);
    const fine = await writeNb(join(d, "fine.ipynb"), [["code", "print('fine')"]]);
    const r = await nbagent(["run", "--allow-errors", "--timeout", "1", "-o", out, died, slow, fine]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /died\.ipynb: ran 2 cells.*stopped: the kernel died/);
    assert.match(r.stderr, /slow\.ipynb: ran 1 cells.*stopped: timed out/);
    assert.match(
      r.stderr,
      /died\.ipynb: cell 1 \(id c1\) failed: the kernel died while it ran; the notebook stopped there\.\n-{18}\nimport os\nos\._exit\(3\)\n-{18}\n/,
    );
    assert.match(
      r.stderr,
      /slow\.ipynb: cell 0 \(id c0\) failed: it timed out and was interrupted; the notebook stopped there\.\n-{18}\nimport time\ntime\.sleep\(60\)\n-{18}\n/,
    );
    const diedNb = await readNb(join(out, "died.ipynb"));
    assert.deepEqual(texts(diedNb)[0], ["before\n"]);
    assert.deepEqual(texts(diedNb)[2], []);
    assert.equal(diedNb.cells[2].execution_count, null);
    const slowNb = await readNb(join(out, "slow.ipynb"));
    assert.deepEqual(texts(slowNb), [["!KeyboardInterrupt"], []]);
    assert.deepEqual(texts(await readNb(join(out, "fine.ipynb"))), [["fine\n"]]);
    for (const name of ["died.ipynb", "slow.ipynb", "fine.ipynb"]) {
      assert.equal(await validate(join(out, name)), "ok", name);
    }
  });

  it("an input that cannot be read leaves the output (and an in-place file) byte-identical and is named", async () => {
    const d = await dir();
    const existing = await writeNb(join(d, "existing.ipynb"), [["code", "print('kept')"]]);
    const kept = await readFile(existing);
    const inputs: [string, string, RegExp][] = [
      ["json.ipynb", '{"cells": [', /Invalid JSON in notebook: \S*json\.ipynb \(.+\)/],
      ["nocells.ipynb", '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', /missing cells array/],
      [
        "v2.ipynb",
        '{"nbformat": 2, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]}',
        /It is an nbformat 2 notebook; nbagent reads nbformat 4/,
      ],
    ];
    for (const [name, text, re] of inputs) {
      const input = join(d, name);
      await writeFile(input, text);
      const { code, stderr } = await captureStderr(() =>
        runCommand.run([input, "-o", existing], testSettings()),
      );
      assert.equal(code, 1, stderr);
      assert.ok((await readFile(existing)).equals(kept), `${name}: the output was overwritten`);
      assert.match(
        stderr,
        new RegExp(`^Error: input ${input}: `),
        `${name}: the input is named as the bad file`,
      );
      assert.match(stderr, re, name);
      assert.match(stderr, new RegExp(`Not run; ${existing} was not written\\.\\n$`), name);
      assert.equal(stderr.includes(`notebook: ${existing}`), false, `${name}: the output is not blamed`);
      // in place: the bad file itself stays as it was
      const { code: c2, stderr: e2 } = await captureStderr(() =>
        runCommand.run(["--inplace", input], testSettings()),
      );
      assert.equal(c2, 1, e2);
      assert.equal(await readFile(input, "utf8"), text);
      assert.match(e2, /Not run; the file was not changed\.\n$/);
    }
    const missing = await captureStderr(() =>
      runCommand.run([join(d, "missing.ipynb"), "-o", existing], testSettings()),
    );
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /input notebook not found: \S*missing\.ipynb/);
    assert.ok((await readFile(existing)).equals(kept));

    // Several notebooks into a directory: the bad one's output stays, the good one runs.
    const out = join(d, "out");
    await mkdir(out);
    await writeFile(join(out, "json.ipynb"), "previous result");
    const good = await writeNb(join(d, "good.ipynb"), [["code", "print('good')"]]);
    const r = await nbagent(["run", "-o", out, join(d, "json.ipynb"), good]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(await readFile(join(out, "json.ipynb"), "utf8"), "previous result");
    assert.match(
      r.stderr,
      /^Error: input \S*json\.ipynb: Invalid JSON.*Not run; \S*out\/json\.ipynb was not written\.$/m,
    );
    assert.deepEqual(texts(await readNb(join(out, "good.ipynb"))), [["good\n"]]);
  });

  it("an nbformat 3 notebook runs as nbformat reads it; the output is written as 4.5 and the note says so", async () => {
    const d = await dir();
    const input = join(d, "v3.ipynb");
    const v3 = JSON.stringify({
      metadata: { name: "v3" },
      nbformat: 3,
      nbformat_minor: 0,
      worksheets: [
        {
          metadata: {},
          cells: [
            { cell_type: "heading", level: 1, metadata: {}, source: ["Old"] },
            { cell_type: "code", language: "python", metadata: {}, input: ["print(6 * 7)"], outputs: [] },
          ],
        },
      ],
    });
    await writeFile(input, v3);
    const output = join(d, "out.ipynb");
    // Its own process: in this one, the concurrent tests capture process.stderr.
    const { code, stderr } = await nbagent(["run", input, "-o", output]);
    assert.equal(code, 0, stderr);
    assert.match(
      stderr,
      /^Note: \S*v3\.ipynb is an nbformat 3 notebook; it was upgraded to nbformat 4\.5 as Jupyter does, and \S*out\.ipynb is written as 4\.5\.\n/,
    );
    assert.equal(await readFile(input, "utf8"), v3, "the input is untouched");
    const nb = await readNb(output);
    assert.equal(nb.nbformat, 4);
    assert.equal(nb.nbformat_minor, 5);
    assert.deepEqual(nb.cells[0].source, ["# Old"]);
    assert.deepEqual(outputTexts(nb), [[], ["42\n"]]);
    assert.equal(await validate(output), "ok");
  });

  it("usage errors exit 2 and name the problem", async () => {
    const d = await dir();
    const a = await writeNb(join(d, "a.ipynb"), [["code", "1"]]);
    const b = await writeNb(join(d, "b.ipynb"), [["code", "2"]]);
    await mkdir(join(d, "out"));
    await mkdir(join(d, "sub"));
    const before = await readFile(a);
    const cases: [string[], RegExp][] = [
      [[], /no notebook given/],
      [[join(d, "missing.ipynb")], /notebook not found/],
      [["-o", join(d, "x.ipynb"), a, b], /several notebooks/],
      [["-o", join(d, "x.ipynb"), "--inplace", a], /exclude each other/],
      [["--timeout", "-1", a], /--timeout/],
      [["--timeout", "abc", a], /--timeout/],
      [["--prestart", "x", a], /--prestart/],
      [["-o", join(d, "nodir"), a, b], /-o directory does not exist/],
      [["--cwd", join(d, "nodir"), a], /--cwd is not a directory/],
      [["--bogus", a], /bogus/],
      // The same output twice: the second job's copy/load would race the first one's saves.
      [[a, a], /two notebooks would write the same file/],
      [["-o", join(d, "out"), a, join(d, "sub", "..", "a.ipynb")], /two notebooks would write the same file/],
    ];
    // The command object in this process (a CLI process per case costs a second of CPU each); usage
    // errors are found before anything asynchronous, so stderr is captured for exactly that call.
    for (const [args, re] of cases) {
      const { code, stderr } = await captureStderr(() => runCommand.run(args, testSettings()));
      assert.equal(code, 2, `${args.join(" ")}: ${stderr}`);
      assert.match(stderr, re, args.join(" "));
      assert.match(stderr, /usage: nbagent run/, args.join(" "));
    }
    // And once through the real CLI: the code reaches the process exit status.
    const r = await nbagent(["run", "-o", join(d, "x.ipynb"), a, b]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /several notebooks/);
    assert.ok((await readFile(a)).equals(before), "a usage error wrote the notebook");
  });
});
