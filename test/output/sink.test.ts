import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { applyOverwrites, OutputSink, sanitise } from "../../src/output/index.js";

const dir = mkdtempSync(join(tmpdir(), "nbagent-sink-"));
after(() => rmSync(dir, { recursive: true, force: true }));

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
  assert.equal(d.text, "step 3\nbold\n");
  assert.equal(d.totalLines, 2);
  assert.equal(d.outputLines, 2);
  assert.equal(d.truncated, false);
  assert.equal(d.artifactId, undefined);
});

test("counts lines and bytes of multibyte text, including a last partial line", () => {
  const sink = new OutputSink();
  sink.push("héllo\nwörld\nend");
  const d = sink.end();
  assert.equal(d.totalLines, 3);
  assert.equal(d.totalBytes, Buffer.byteLength("héllo\nwörld\nend"));
  assert.equal(d.text, "héllo\nwörld\nend");
});

test("the kept tail is cut on a UTF-8 and a line boundary, with exact counts", () => {
  const maxBytes = 1000;
  const sink = new OutputSink({ maxBytes });
  const lines: string[] = [];
  for (let i = 0; i < 500; i++) lines.push(`${i} é€😀${"ü".repeat(i % 17)}\n`);
  const full = lines.join("");
  // odd chunk sizes so chunk boundaries fall inside lines
  for (let i = 0; i < full.length; ) {
    let n = 1 + ((i * 7) % 23);
    if (/[\uDC00-\uDFFF]/.test(full[i + n] ?? "")) n++; // never split a surrogate pair
    sink.push(full.slice(i, i + n));
    i += n;
  }
  const d = sink.end();
  assert.equal(d.truncated, true);
  assert.ok(Buffer.byteLength(d.text) <= maxBytes);
  assert.ok(Buffer.byteLength(d.text) > maxBytes / 2);
  assert.ok(full.endsWith(d.text), "text is a suffix of the stream");
  assert.ok(!d.text.includes("\uFFFD"), "no broken characters");
  const before = full.slice(0, full.length - d.text.length);
  assert.ok(before.endsWith("\n"), "text starts at a line start");
  assert.equal(d.totalLines, 500);
  assert.equal(d.outputLines, d.text.split("\n").length - 1);
  assert.equal(d.firstLine, 500 - d.outputLines + 1);
  assert.equal(d.text.split("\n")[0], lines[d.firstLine - 1].slice(0, -1));
  assert.equal(d.totalBytes, Buffer.byteLength(full));
});

test("one huge line without breaks is cut on a UTF-8 boundary only", () => {
  const sink = new OutputSink({ maxBytes: 101 });
  for (let i = 0; i < 1000; i++) sink.push("€");
  const d = sink.end();
  assert.equal(d.truncated, true);
  assert.equal(d.text, "€".repeat(33));
  assert.equal(d.totalLines, 1);
  assert.equal(d.totalBytes, 3000);
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
  expected += "green tail";
  const d = sink.end();
  assert.equal(d.artifactId, "a1");
  assert.equal(d.artifactError, undefined);
  assert.equal(statSync(path).size, Buffer.byteLength(expected));
  assert.equal(readFileSync(path, "utf8"), expected);
  assert.equal(d.totalLines, 20001);
  assert.ok(expected.endsWith(d.text));
});

test("no artifact is written while output fits", () => {
  const path = join(dir, "a2.log");
  const sink = new OutputSink({ maxBytes: 4096, artifact: { id: "a2", path } });
  sink.push("small\n");
  const d = sink.end();
  assert.equal(d.artifactId, undefined);
  assert.throws(() => statSync(path));
});

test("dump mid-stream shows the pending partial line without ending the stream", () => {
  const sink = new OutputSink();
  sink.push("a\nhalf");
  assert.equal(sink.dump().text, "a\nhalf");
  sink.push(" line\n");
  assert.equal(sink.end().text, "a\nhalf line\n");
});

test("chunks larger than the spill batch and multibyte text at batch edges all reach the artifact", () => {
  const path = join(dir, "a3.log");
  const sink = new OutputSink({ maxBytes: 1000, artifact: { id: "a3", path } });
  const pieces = ["é".repeat(700_000) + "\n", "small\n", `${"€".repeat(1_000_000)}\n`, "x\n".repeat(300_000)];
  for (const p of pieces) sink.push(p);
  const d = sink.end();
  const expected = pieces.join("");
  assert.equal(d.totalBytes, Buffer.byteLength(expected));
  assert.equal(readFileSync(path, "utf8"), expected);
});
