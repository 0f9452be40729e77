/** OutputSink: per-cell bounded views within one shared budget, one artifact holding every byte. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { allocate, fairShares } from "../../src/output/budget.js";
import {
  applyOverwrites,
  DEFAULT_CUT_OVERHEAD,
  type OutputDump,
  OutputSink,
  sanitise,
} from "../../src/output/index.js";

import { MAX_DISPLAY_SLOTS } from "../../src/output/sink.js";

const dir = mkdtempSync(join(tmpdir(), "nbagent-sink-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** One cell's shown lines as text (gaps as `…`). */
function shown(d: OutputDump, cell = 0): string {
  const out: string[] = [];
  let next = 1;
  for (const l of d.cells[cell].shown) {
    if (l.n > next) out.push("…");
    out.push(l.cutChars ? `${l.text}[+${l.cutChars}]` : l.text);
    next = l.n + 1;
  }
  return out.join("\n");
}

function artifactLines(path: string): string[] {
  return readFileSync(path, "utf8").split("\n");
}

test("sanitise strips ANSI colours and applies carriage-return overwrites per line", () => {
  assert.equal(sanitise("\x1b[31mred\x1b[0m plain\n"), "red plain\n");
  assert.equal(applyOverwrites("10%\r20%\r100%\ndone\n"), "100%\ndone\n");
  assert.equal(applyOverwrites("a\r\nb\r\n"), "a\nb\n");
  assert.equal(applyOverwrites("abc\b\bx\n"), "ax\n");
});

test("a progress bar split across chunks collapses to its final state", () => {
  const sink = new OutputSink();
  for (const c of ["step 1", "\rstep 2", "\rst", "ep 3\n", "\x1b[1mbold", "\x1b[0m\n"]) sink.push(c);
  const d = sink.end();
  assert.equal(shown(d), "step 3\nbold");
  assert.equal(d.cells[0].lines, 2);
  assert.equal(d.truncated, false);
  assert.equal(d.artifactId, undefined);
});

test("the model's view folds hello\\r, \\r, \\n written separately as one write (hello)", () => {
  const split = new OutputSink();
  for (const c of ["hello\r", "\r", "\n", "a\r", "\rb\r\n"]) split.push(c);
  const whole = new OutputSink();
  whole.push("hello\r\r\na\r\rb\r\n");
  assert.equal(shown(split.end()), "hello\nb");
  assert.equal(shown(whole.end()), "hello\nb");
});

test("counts lines and bytes of multibyte text, including a last partial line", () => {
  const sink = new OutputSink();
  sink.push("héllo\nwörld\nend");
  const mid = sink.dump();
  assert.equal(mid.cells[0].lines, 3);
  assert.equal(mid.cells[0].bytes, Buffer.byteLength("héllo\nwörld\nend"));
  assert.equal(shown(mid), "héllo\nwörld\nend");
  sink.push(" here\n");
  assert.equal(shown(sink.end()), "héllo\nwörld\nend here");
});

test("fair shares: cells that fit keep all, the rest split what is left; important text first", () => {
  assert.deepEqual(fairShares(100, [10, 500, 20, 500]), [10, 35, 20, 35]);
  assert.deepEqual(fairShares(100, [10, 20]), [10, 20]);
  const a = allocate(100, [500, 500, 500], [0, 0, 80]);
  assert.deepEqual(a.reserved, [0, 0, 50]);
  assert.deepEqual(a.shares, [17, 17, 66]);
});

test("each cell keeps a head and a tail of its own output; cells that fit are whole", () => {
  const path = join(dir, "cells.log");
  const sink = new OutputSink({ maxBytes: 2000, artifact: { id: "cells", path } });
  sink.startCell("[1/3]");
  sink.push("first cell\n");
  sink.startCell("[2/3]");
  for (let i = 0; i < 10000; i++) sink.push(`row ${i}\n`);
  sink.startCell("[3/3]");
  sink.push("third cell\n");
  const d = sink.end();
  assert.equal(d.truncated, true);
  assert.equal(d.artifactId, "cells");
  assert.equal(shown(d, 0), "first cell");
  assert.equal(shown(d, 2), "third cell");
  const mid = d.cells[1];
  assert.equal(mid.lines, 10000);
  assert.equal(mid.cut, true);
  const text = shown(d, 1);
  assert.match(text, /^row 0\nrow 1\n(row \d+\n)*…\n(row \d+\n)*row 9999$/);
  const used = mid.shown.reduce((s, l) => s + Buffer.byteLength(l.text) + 1, 0);
  // the budget less the headers and the words of one cut cell, less what cells 1 and 3 keep
  assert.equal(mid.share, 2000 - 3 * 6 - DEFAULT_CUT_OVERHEAD - 11 - 11);
  assert.ok(used <= mid.share && used > mid.share - 20, `${used} of ${mid.share}`);
  const lines = artifactLines(path);
  assert.deepEqual(lines.slice(0, 4), ["[1/3]", "first cell", "[2/3]", "row 0"]);
  assert.equal(mid.firstArtifactLine, 4);
  // every shown line is the artifact's line at firstArtifactLine + n - 1
  for (const l of mid.shown) assert.equal(lines[mid.firstArtifactLine + l.n - 2], l.text);
  assert.deepEqual(lines.slice(10003), ["[3/3]", "third cell", ""]);
  assert.equal(d.totalLines, 10005);
  assert.equal(d.totalBytes, statSync(path).size);
});

test("a traceback after a flood is shown whole, even with many flooding cells", () => {
  const sink = new OutputSink({ maxBytes: 3000 });
  for (let c = 0; c < 6; c++) {
    sink.startCell(`[${c + 1}/6]`);
    for (let i = 0; i < 2000; i++) sink.push(`cell ${c} line ${i}\n`);
  }
  const tb = Array.from({ length: 20 }, (_, i) => `  frame ${i} of the traceback`).join("\n");
  sink.push(`Traceback (most recent call last):\n${tb}\nValueError: boom\n`, "error");
  const d = sink.end();
  const last = shown(d, 5);
  assert.ok(last.endsWith(`Traceback (most recent call last):\n${tb}\nValueError: boom`), last);
  assert.match(last, /^cell 5 line 0\n/);
  for (let c = 0; c < 5; c++)
    assert.match(shown(d, c), new RegExp(`^cell ${c} line 0\\n[\\s\\S]*cell ${c} line 1999$`));
});

test("a notice in the middle of a flood stays visible", () => {
  const sink = new OutputSink({ maxBytes: 2000 });
  for (let i = 0; i < 1000; i++) sink.push(`a ${i}\n`);
  sink.push("[the kernel said something important]\n", "notice");
  for (let i = 0; i < 1000; i++) sink.push(`b ${i}\n`);
  const text = shown(sink.end());
  assert.match(text, /^a 0\n[\s\S]*…\n\[the kernel said something important\]\n…\n[\s\S]*b 999$/);
});

test("a line longer than the budget is cut with the count of what is left; the artifact has it whole", () => {
  const path = join(dir, "long.log");
  const sink = new OutputSink({ maxBytes: 1000, artifact: { id: "long", path } });
  const line = "é".repeat(150_000);
  for (let i = 0; i < line.length; i += 7000) sink.push(line.slice(i, i + 7000));
  sink.push("\nafter\n");
  const d = sink.end();
  const [first, second] = d.cells[0].shown;
  assert.equal(first.text, "é".repeat(first.text.length));
  assert.ok(Buffer.byteLength(first.text) <= 1000 - "after\n".length);
  assert.equal(first.cutChars, 150_000 - first.text.length);
  assert.equal(second.text, "after");
  assert.equal(d.truncated, true);
  assert.equal(readFileSync(path, "utf8"), `${line}\nafter\n`);
});

test("a long line between short ones is cut to the space left, not dropped", () => {
  const sink = new OutputSink({ maxBytes: 5000 });
  sink.push(`${"a".repeat(1000)}\n${"b".repeat(20_000)}\n${"c".repeat(1000)}\n`);
  const d = sink.end();
  const [a, b, c] = d.cells[0].shown;
  assert.deepEqual([a.n, a.cutChars, c.n, c.cutChars], [1, 0, 3, 0]);
  assert.equal(b.n, 2);
  assert.equal(b.text, "b".repeat(b.text.length));
  assert.ok(b.text.length > 2500 && b.text.length + 2002 <= 5000, `${b.text.length}`);
  assert.equal(b.cutChars, 20_000 - b.text.length);
});

test("a huge line arriving in one chunk is cut too, and memory holds only its start", () => {
  const sink = new OutputSink({ maxBytes: 500 });
  sink.push(`${"x".repeat(300_000)}\n`);
  const d = sink.end();
  assert.equal(d.cells[0].shown.length, 1);
  assert.equal(d.cells[0].shown[0].cutChars, 300_000 - d.cells[0].shown[0].text.length);
  assert.ok(d.cells[0].shown[0].text.length <= 500);
});

test("a progress line rewritten with \\r past the budget keeps only its last state", () => {
  const sink = new OutputSink({ maxBytes: 200 });
  for (let i = 0; i <= 1000; i++) sink.push(`\rprogress ${i}/1000`);
  sink.push("\n");
  const d = sink.end();
  assert.equal(shown(d), "progress 1000/1000");
  assert.equal(d.truncated, false);
});

test("clear drops the view; the artifact keeps what was cleared and marks the clear", () => {
  const path = join(dir, "clear.log");
  const sink = new OutputSink({ maxBytes: 100, artifact: { id: "clear", path } });
  sink.startCell("[1/1]");
  sink.clear(); // nothing shown yet: no marker
  sink.push("frame 0\npartial");
  sink.clear();
  sink.push("frame 1\n");
  const small = sink.dump();
  assert.equal(shown(small), "frame 1");
  assert.equal(small.cells[0].clears, 1);
  assert.equal(small.truncated, false);
  for (let i = 0; i < 100; i++) sink.push(`more ${i}\n`);
  const d = sink.end();
  assert.equal(d.cells[0].firstArtifactLine, 5);
  assert.deepEqual(artifactLines(path).slice(0, 6), [
    "[1/1]",
    "frame 0",
    "partial",
    "[output cleared]",
    "frame 1",
    "more 0",
  ]);
});

test("no artifact is written while output fits; one written for cleared output alone is removed", () => {
  const path = join(dir, "a2.log");
  const sink = new OutputSink({ maxBytes: 4096, artifact: { id: "a2", path } });
  sink.push("small\n");
  assert.equal(sink.end().artifactId, undefined);
  assert.equal(existsSync(path), false);
  const path3 = join(dir, "a3.log");
  const cleared = new OutputSink({ maxBytes: 100, artifact: { id: "a3", path: path3 } });
  for (let i = 0; i < 50; i++) {
    cleared.clear();
    cleared.push(`frame ${i}\n`);
  }
  const d = cleared.end();
  assert.equal(shown(d), "frame 49");
  assert.equal(d.artifactId, undefined);
  assert.equal(existsSync(path3), false);
});

test("past the threshold the artifact holds every byte of the sanitised stream", () => {
  const path = join(dir, "a1.log");
  const sink = new OutputSink({ maxBytes: 4096, artifact: { id: "a1", path } });
  let expected = "";
  for (let i = 0; i < 20000; i++) {
    const piece = `line ${i} ✓ ${"x".repeat(i % 50)}\n`;
    expected += piece;
    sink.push(piece);
  }
  sink.push("\x1b[32mgreen tail\x1b[0m");
  expected += "green tail\n";
  const d = sink.end();
  assert.equal(d.artifactId, "a1");
  assert.equal(d.artifactError, undefined);
  assert.equal(statSync(path).size, Buffer.byteLength(expected));
  assert.equal(readFileSync(path, "utf8"), expected);
  assert.equal(d.totalLines, 20001);
  assert.equal(d.cells[0].shown.at(-1)?.text, "green tail");
});

test("chunks larger than the spill batch and multibyte text at batch edges all reach the artifact", () => {
  const path = join(dir, "a4.log");
  const sink = new OutputSink({ maxBytes: 1000, artifact: { id: "a4", path } });
  const pieces = ["é".repeat(700_000) + "\n", "small\n", `${"€".repeat(1_000_000)}\n`, "x\n".repeat(300_000)];
  for (const p of pieces) sink.push(p);
  const d = sink.end();
  const expected = pieces.join("");
  assert.equal(d.totalBytes, Buffer.byteLength(expected));
  assert.equal(readFileSync(path, "utf8"), expected);
  assert.equal(d.cells[0].lines, 300_003);
});

test("a display, an error, or the other stream starts a new line", () => {
  const sink = new OutputSink();
  sink.push("out", "stdout");
  sink.push("err\n", "stderr");
  sink.push("half");
  sink.push("<Figure>", "display");
  sink.push("tail");
  sink.push("Traceback\n", "error");
  assert.equal(shown(sink.end()), "out\nerr\nhalf\n<Figure>\ntail\nTraceback");
});

test("past the displays it keeps places for, an unknown id is 'untracked', not 'unknown'", () => {
  const sink = new OutputSink({ maxBytes: 2000 });
  sink.startCell();
  for (let i = 0; i <= MAX_DISPLAY_SLOTS; i++) sink.push(`${i}`, "display", `d${i}`);
  assert.equal(sink.updateDisplay("d0", "x"), "untracked");
  assert.equal(sink.updateDisplay(`d${MAX_DISPLAY_SLOTS}`, "y"), "replaced");
  assert.equal(sink.updateDisplay("never", "z"), "untracked");
  const fresh = new OutputSink({ maxBytes: 2000 });
  fresh.startCell();
  fresh.push("a", "display", "a");
  assert.equal(fresh.updateDisplay("never", "z"), "unknown");
});

test("an updated display is replaced where it was shown, wherever the view keeps it", () => {
  // kept in the head, lines after it move; the artifact keeps each state after a marker
  const path = join(dir, "update-head.log");
  const sink = new OutputSink({ maxBytes: 2000, artifact: { id: "update-head", path } });
  sink.startCell("[1/2]");
  sink.push("a\n");
  sink.push("step 0", "display", "d1");
  sink.push("partial");
  assert.equal(sink.updateDisplay("d1", "step 1\nof 2"), "replaced");
  sink.push(" line\n");
  assert.equal(sink.updateDisplay("nope", "x"), "unknown");
  sink.startCell("[2/2]");
  assert.equal(sink.updateDisplay("d1", "done"), "replaced");
  for (let i = 0; i < 2000; i++) sink.push(`row ${i}\n`);
  const d = sink.end();
  assert.equal(shown(d, 0), "a\ndone\npartial line");
  assert.equal(d.cells[0].lines, 3);
  assert.equal(d.cells[0].edits, 2);
  const lines = artifactLines(path);
  assert.deepEqual(lines.slice(0, 9), [
    "[1/2]",
    "a",
    "step 0",
    "[display updated]",
    "step 1",
    "of 2",
    "partial line",
    "[2/2]",
    "[display updated]",
  ]);
  // cell 2's range covers the update's lines written in it; its offset is its first line not shown
  const cell2 = d.cells[1];
  assert.equal(cell2.firstArtifactLine, 9);
  assert.equal(cell2.artifactExtra, 2);
  assert.equal(cell2.linearBefore, 1);
  assert.equal(d.totalLines, 8 + 2 + 2000);

  // a display in the middle of a flood (only counted), then one in the tail
  const flood = new OutputSink({
    maxBytes: 1000,
    artifact: { id: "update-flood", path: join(dir, "f.log") },
  });
  flood.push("head\n");
  for (let i = 0; i < 500; i++) flood.push(`row ${i}\n`);
  flood.push("mid", "display", "m");
  for (let i = 500; i < 1000; i++) flood.push(`row ${i}\n`);
  flood.push("tail 0", "display", "t");
  flood.push("last\n");
  flood.updateDisplay("m", "m1\nm2\nm3");
  flood.updateDisplay("t", "tail 1\ntail 2");
  const f = flood.end();
  const cell = f.cells[0];
  assert.equal(cell.lines, 1 + 1000 + 3 + 2 + 1);
  assert.match(shown(f), /^head\nrow 0\n[\s\S]*…\n[\s\S]*row 999\ntail 1\ntail 2\nlast$/);
  for (const l of cell.shown) if (l.text === "last") assert.equal(l.n, cell.lines);
  // the artifact: the first states where they were shown, then the two updates (3 + 2 lines and markers)
  assert.equal(cell.artifactExtra, -2 - 1 + 4 + 3);
  assert.equal(f.totalLines, cell.lines + cell.artifactExtra);
  assert.equal(cell.linearBefore, 502);
});

test("a cleared display is not updated again; a forgotten id is unknown", () => {
  const sink = new OutputSink({ maxBytes: 2000 });
  sink.push("x", "display", "d");
  sink.clear();
  assert.equal(sink.updateDisplay("d", "y"), "gone");
  sink.push("z\n");
  assert.equal(shown(sink.end()), "z");
});
