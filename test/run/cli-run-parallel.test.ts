/**
 * `nbagent run -j N`: N notebooks at once, each in its own kernel. Concurrency is proved by a file
 * handshake through the kernels (each notebook waits until the other has started; no sleeps); the
 * files equal a -j 1 run's; a failing notebook does not stop the other; piped progress stays whole
 * lines that name their notebook; a bad -j is a usage error.
 */
import assert from "node:assert/strict";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { nbagent, normalized, outputTexts, perTestDirs, readNb, validate, writeNb } from "./helpers.js";

/**
 * Python for a cell that marks `me` as started in `dir` and then waits for `other`'s mark. The
 * bound only keeps a broken run from hanging the suite: a -j 1 run would fail there, not pass.
 */
const handshake = (dir: string, me: string, other: string) =>
  [
    "import os, time, pathlib",
    `d = pathlib.Path(${JSON.stringify(dir)})`,
    `(d / ${JSON.stringify(`${me}.started`)}).write_text("")`,
    `for _ in range(60000):`,
    `    if (d / ${JSON.stringify(`${other}.started`)}).exists(): break`,
    "    time.sleep(0.01)",
    "else:",
    `    raise TimeoutError(${JSON.stringify(`${other} never started`)})`,
    `print(${JSON.stringify(`${me} saw ${other}`)})`,
  ].join("\n");

const texts = outputTexts;

describe("nbagent run -j N", { concurrency: true }, () => {
  const dir = perTestDirs();

  it("-j 2: two notebooks that each wait for the other to start both finish", async () => {
    const d = await dir();
    const a = await writeNb(join(d, "a.ipynb"), [
      ["code", handshake(d, "a", "b")],
      ["code", "print('a done')"],
    ]);
    const b = await writeNb(join(d, "b.ipynb"), [
      ["code", handshake(d, "b", "a")],
      ["code", "print('b done')"],
    ]);
    const r = await nbagent(["run", "-j", "2", a, b]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(texts(await readNb(a)), [["a saw b\n"], ["a done\n"]]);
    assert.deepEqual(texts(await readNb(b)), [["b saw a\n"], ["b done\n"]]);
    // Piped: every progress line is whole and names its notebook; the summary keeps the inputs' order.
    const lines = r.stderr.trimEnd().split("\n");
    const progress = lines.filter((l) => / cell \d /.test(l));
    assert.equal(progress.length, 4, r.stderr);
    for (const l of progress) assert.match(l, /^[ab]\.ipynb \[[12]\/2\] cell [01] ok [\d.]+s$/);
    const summary = lines.filter((l) => l.includes(": ran "));
    assert.deepEqual(
      summary.map((l) => l.replace(/ in [\d.]+s/, "")),
      [`${a}: ran 2 cells, 0 failed`, `${b}: ran 2 cells, 0 failed`],
    );
  });

  it("-j 3 writes the same notebooks as -j 1", async () => {
    const d = await dir();
    const cells: Parameters<typeof writeNb>[1][] = [
      [
        ["code", "xs = list(range(5))\nprint(sum(xs))"],
        ["markdown", "*m*"],
        ["code", "xs[-1] * 10"],
      ],
      [
        ["code", "import sys\nprint('err', file=sys.stderr)"],
        ["code", "from IPython.display import HTML\nHTML('<b>x</b>')"],
      ],
      [["code", "import os\nprint(os.path.basename(os.getcwd()))"]],
      [
        ["code", "print('four')"],
        ["code", "4"],
      ],
    ];
    const one = join(d, "one");
    const three = join(d, "three");
    await mkdir(one);
    await mkdir(three);
    const inputs = await Promise.all(cells.map((c, i) => writeNb(join(d, `n${i}.ipynb`), c)));
    const r1 = await nbagent(["run", "--quiet", "-o", one, ...inputs]);
    assert.equal(r1.code, 0, r1.stderr);
    const r3 = await nbagent(["run", "--quiet", "-j", "3", "-o", three, ...inputs]);
    assert.equal(r3.code, 0, r3.stderr);
    assert.equal(r3.stderr, "");
    for (const i of cells.keys()) {
      const name = `n${i}.ipynb`;
      assert.deepEqual(await normalized(join(three, name)), await normalized(join(one, name)), name);
      assert.equal(await validate(join(three, name)), "ok");
    }
    assert.deepEqual(texts(await readNb(join(three, "n2.ipynb"))), [[`${d.split("/").pop()}\n`]]);
  });

  it("a failing notebook does not stop the other; exit 1; its failure is one block", async () => {
    const d = await dir();
    const ok = await writeNb(join(d, "ok.ipynb"), [
      ["code", handshake(d, "ok", "bad")],
      ["code", "print('ok done')"],
    ]);
    const bad = await writeNb(join(d, "bad.ipynb"), [
      ["code", handshake(d, "bad", "ok")],
      ["code", "1/0"],
      ["code", "print('not run')"],
    ]);
    const r = await nbagent(["run", "-j", "2", bad, ok]);
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(texts(await readNb(ok)), [["ok saw bad\n"], ["ok done\n"]]);
    assert.deepEqual(texts(await readNb(bad)), [["bad saw ok\n"], ["!ZeroDivisionError"], []]);
    // The failure block is printed whole: its heading, source and traceback with no other line inside.
    assert.match(
      r.stderr,
      /\nbad\.ipynb: cell 1 \(id c1\) failed: it raised an error; the notebook stopped there\.\n-{18}\n1\/0\n-{18}\n\n-+\nZeroDivisionError +Traceback \(most recent call last\)\n(?:(?!ok\.ipynb)[^\n]*\n)*?ZeroDivisionError: division by zero\n/,
    );
    assert.match(r.stderr, /bad\.ipynb: ran 2 cells in [\d.]+s, 1 failed; stopped: cell 1 failed\n/);
    assert.match(r.stderr, /ok\.ipynb: ran 2 cells in [\d.]+s, 0 failed\n/);
  });

  it("forked kernels of a run end with their atexit handlers run and their open files flushed", async () => {
    // Every kernel of a run of several notebooks is forked from the fork server, and a forked kernel
    // skips the interpreter's teardown at exit (docs/reliability.md): not what a notebook expects.
    const d = await dir();
    const exiting = (name: string) =>
      [
        "import atexit, os, pathlib",
        `d = pathlib.Path(${JSON.stringify(d)})`,
        `atexit.register(lambda: (d / ${JSON.stringify(`${name}.atexit`)}).write_text('ran'))`,
        `f = open(d / ${JSON.stringify(`${name}.open`)}, 'w')`,
        "f.write('unflushed')",
        "print('forked', 'forkserver' in open(f'/proc/{os.getppid()}/cmdline').read())",
      ].join("\n");
    const a = await writeNb(join(d, "a.ipynb"), [["code", exiting("a")]]);
    const b = await writeNb(join(d, "b.ipynb"), [["code", exiting("b")]]);
    const r = await nbagent(["run", "-j", "2", a, b]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(texts(await readNb(a)), [["forked True\n"]]);
    assert.deepEqual(texts(await readNb(b)), [["forked True\n"]]);
    for (const name of ["a", "b"]) {
      assert.equal(await readFile(join(d, `${name}.atexit`), "utf8"), "ran", name);
      assert.equal(await readFile(join(d, `${name}.open`), "utf8"), "unflushed", name);
    }
  });

  it("-j above the number of notebooks runs them all; a bad -j is a usage error", async () => {
    const d = await dir();
    const a = await writeNb(join(d, "a.ipynb"), [["code", "print('a')"]]);
    const before = await readFile(a);
    for (const bad of ["0", "x", "1.5"]) {
      const r = await nbagent(["run", "-j", bad, a]);
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
      assert.match(
        r.stderr,
        new RegExp(
          `^nbagent run: -j must be a whole number of notebooks \\(1 or more\\), got ${bad.replace(".", "\\.")}\\n`,
        ),
      );
      assert.ok((await readFile(a)).equals(before));
    }
    const r = await nbagent(["run", "--jobs", "8", "--quiet", a]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(texts(await readNb(a)), [["a\n"]]);
  });
});
