/**
 * Paging and searching artifacts (docs/artifacts.md): pages always advance, every byte comes back
 * exactly once (long lines continue inside the line), past the end is an error, and a search
 * counts every matching line, even in lines longer than its window.
 */
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { SEARCH_OVERLAP, SEARCH_WINDOW } from "../../src/output/artifact-pages.js";
import { ArtifactReadError, type ArtifactSlice, ArtifactStore } from "../../src/output/index.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-pages-"));
after(() => rmSync(root, { recursive: true, force: true }));
const store = new ArtifactStore({ root });

function artifact(content: string | Buffer): { id: string; path: string } {
  const ref = store.create("pages");
  writeFileSync(ref.path, content);
  return ref;
}

/** Pages from the top following each page's `next` until the end; returns the pages. */
async function pageThrough(
  id: string,
  options: { limit?: number; maxBytes?: number },
): Promise<ArtifactSlice[]> {
  const pages: ArtifactSlice[] = [];
  let at: { offset: number; column?: number } | undefined = { offset: 1 };
  while (at) {
    const page = await store.read(id, { ...at, ...options });
    const prev = pages.at(-1);
    if (prev) assert.ok(page.data.length > 0 || page.endLine >= page.startLine, "a page advances");
    pages.push(page);
    at = page.next;
    assert.ok(pages.length < 10_000, "paging ends");
  }
  return pages;
}

function mixedContent(): Buffer {
  const parts = [
    "short\n",
    "\n",
    `${"é".repeat(40_000)}\n`, // 80 KB of two-byte characters: a long line (indexed)
    "after long\n",
    `${"x".repeat(20_000)}€${"y".repeat(9_999)}\n`, // 30 KB: longer than a page, not indexed as long
    ...Array.from({ length: 2100 }, (_, i) => `row ${i}\n`), // past two index marks
    `${"z".repeat(300_000)}\n`,
    "last line without a newline",
  ];
  return Buffer.from(parts.join(""));
}

test("paging returns every byte exactly once, through long lines, for several page sizes", async () => {
  const content = mixedContent();
  const { id } = artifact(content);
  for (const [limit, maxBytes] of [
    [2000, 50 * 1024],
    [7, 4096],
    [1, 1000],
  ]) {
    const pages = await pageThrough(id, { limit, maxBytes });
    const joined = Buffer.concat(pages.map((p) => p.data));
    assert.ok(joined.equals(content), `limit ${limit} maxBytes ${maxBytes}: the pages are the file`);
    for (const p of pages) {
      assert.ok(p.data.length <= maxBytes + limit + 4, "a page stays within its budget");
      assert.notEqual(p.text.includes("\uFFFD"), true, "no page splits a character");
    }
  }
});

test("a page of a few bytes still advances, one whole character at least", async () => {
  const content = Buffer.from("ab€c\n\n𝄞𝄞\nxyz");
  const { id } = artifact(content);
  for (const maxBytes of [1, 2, 3]) {
    const pages = await pageThrough(id, { limit: 2, maxBytes });
    assert.ok(Buffer.concat(pages.map((p) => p.data)).equals(content), `maxBytes ${maxBytes}`);
    for (const p of pages) assert.equal(p.text.includes("\uFFFD"), false);
  }
});

test("a page inside a long line says which bytes of it are shown and where the next starts", async () => {
  const line = `${"a".repeat(100_000)}${"b".repeat(100_000)}`;
  const { id } = artifact(`before\n${line}\nafter\n`);
  const p1 = await store.read(id, { offset: 1, maxBytes: 50_000 });
  assert.equal(p1.text, "before\n");
  assert.deepEqual(p1.next, { offset: 2 }, "a long line does not start a page that has lines");
  const p2 = await store.read(id, { offset: 2, maxBytes: 50_000 });
  assert.equal(p2.text, "a".repeat(50_000));
  assert.deepEqual(p2.partial, [{ line: 2, lineBytes: 200_000, from: 1, to: 50_000 }]);
  assert.deepEqual(p2.next, { offset: 2, column: 50_001 });
  const p3 = await store.read(id, { offset: 2, column: 150_001, maxBytes: 60_000 });
  assert.equal(p3.text, `${"b".repeat(50_000)}\nafter\n`);
  assert.deepEqual(p3.partial, [{ line: 2, lineBytes: 200_000, from: 150_001, to: 200_000 }]);
  assert.equal(p3.next, undefined);
  assert.deepEqual([p3.startLine, p3.endLine, p3.lines], [2, 3, 3]);
});

test("past the end, and a column past its line's end, are errors with the facts", async () => {
  const { id } = artifact("one\ntwo\n");
  await assert.rejects(store.read(id, { offset: 3 }), (err: unknown) => {
    assert.ok(err instanceof ArtifactReadError);
    assert.equal(err.code, "past_end");
    assert.deepEqual(err.facts, { lines: 2, offset: 3, sizeBytes: 8 });
    return true;
  });
  await assert.rejects(store.read(id, { offset: 2, column: 4 }), (err: unknown) => {
    assert.ok(err instanceof ArtifactReadError);
    assert.equal(err.code, "column_past_end");
    assert.deepEqual(err.facts, { line: 2, lineBytes: 3, column: 4 });
    return true;
  });
  assert.equal((await store.read(id, { offset: 2, column: 3 })).text, "o\n");
  const long = artifact(`${"q".repeat(70_000)}\n`);
  await assert.rejects(store.read(long.id, { offset: 1, column: 70_001 }), /past the end of line 1/);
  const empty = artifact("");
  const e = await store.read(empty.id);
  assert.deepEqual([e.text, e.lines, e.next], ["", 0, undefined]);
  await assert.rejects(store.read(empty.id, { offset: 2 }), /past the end/);
  await assert.rejects(store.read("artifact://nope"), (err: unknown) => {
    return err instanceof ArtifactReadError && err.code === "not_found";
  });
});

test("a page starts at any line of a large artifact; an artifact that grew is re-read", async () => {
  const lines = Array.from({ length: 5000 }, (_, i) => `n${i + 1}`);
  const { id, path } = artifact(`${lines.join("\n")}\n`);
  assert.equal((await store.read(id, { offset: 3000, limit: 2 })).text, "n3000\nn3001\n");
  assert.equal((await store.read(id, { offset: 1025, limit: 1 })).text, "n1025\n");
  appendFileSync(path, "n5001\n");
  const tail = await store.read(id, { offset: 5000 });
  assert.deepEqual([tail.text, tail.lines], ["n5000\nn5001\n", 5001]);
});

test("search counts every matching line, lists from offset within the bounds, says where to go on", async () => {
  const lines = Array.from({ length: 1000 }, (_, i) => (i % 10 === 0 ? `ERROR at ${i + 1}` : `ok ${i + 1}`));
  const { id } = artifact(`${lines.join("\n")}\n`);
  const first = await store.search(id, "ERROR", { limit: 5 });
  assert.equal(first.total, 100);
  assert.deepEqual(
    first.matches.map((m) => [m.line, m.text, m.column]),
    [
      [1, "ERROR at 1", 1],
      [11, "ERROR at 11", 1],
      [21, "ERROR at 21", 1],
      [31, "ERROR at 31", 1],
      [41, "ERROR at 41", 1],
    ],
  );
  assert.equal(first.next, 51);
  const later = await store.search(id, "ERROR", { offset: 51, limit: 1000 });
  assert.equal(later.before, 5);
  assert.equal(later.matches.length, 95);
  assert.equal(later.next, undefined);
  assert.equal((await store.search(id, "error")).total, 0, "case-sensitive by default");
  assert.equal((await store.search(id, "(?i)error")).total, 100, "(?i) ignores case");
  await assert.rejects(store.search(id, "(unclosed"), (err: unknown) => {
    return err instanceof ArtifactReadError && err.code === "bad_pattern";
  });
  await assert.rejects(store.search(id, "x", { offset: 1001 }), /past the end/);
});

test("search finds matches deep in lines longer than its window, also across a window edge", async () => {
  const deep = `${"a".repeat(2 * SEARCH_WINDOW)}NEEDLE${"a".repeat(1000)}`;
  const edge = SEARCH_WINDOW - 3; // "NEEDLE" straddles the first window's end
  const straddle = `${"b".repeat(edge)}NEEDLE${"b".repeat(SEARCH_OVERLAP)}`;
  const { id } = artifact(`${deep}\nplain\n${straddle}\nNEEDLE short\n`);
  const found = await store.search(id, "NEEDLE");
  assert.equal(found.total, 3);
  assert.deepEqual(
    found.matches.map((m) => [m.line, m.column, m.whole]),
    [
      [1, 2 * SEARCH_WINDOW + 1, false],
      [3, edge + 1, false],
      [4, 1, true],
    ],
  );
  assert.ok(found.matches[0].text.includes("NEEDLE"));
  assert.ok(Buffer.byteLength(found.matches[0].text) <= 400);
  assert.equal(found.windowed, 2);
  // the shown part starts where it says it does
  const text = readFileSync(store.resolve(id)!, "utf8").split("\n")[0];
  const m = found.matches[0];
  assert.equal(text.slice(m.textColumn - 1, m.textColumn - 1 + m.text.length), m.text);
});
