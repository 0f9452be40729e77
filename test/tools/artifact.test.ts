/**
 * The artifact tool (docs/artifacts.md): a model follows the "Next:" call each result prints and gets
 * every line exactly once (a long line continued inside it); a search lists every matching line;
 * every bad call is an `Error:` that says what to do; the call form other results print works.
 * The real kernel flow (a python output spilled, then read) is in test/run/cli-artifact-tool.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ArtifactStore } from "../../src/output/index.js";
import { type ArtifactToolDetails, createArtifactTool } from "../../src/tools/artifact/artifact.js";
import { createToolbox } from "../../src/tools/index.js";
import type { ToolResult } from "../../src/tools/types.js";
import { testSettings } from "../settings.js";

const root = mkdtempSync(join(tmpdir(), "nbagent-arttool-"));
after(() => rmSync(root, { recursive: true, force: true }));
const store = new ArtifactStore({ root });
const tool = createArtifactTool({ artifacts: store });

const text = (r: ToolResult<ArtifactToolDetails>) => (r.content[0] as { text: string }).text;
const call = (params: unknown) => tool.execute("t", params as never);

function artifact(content: string): { id: string; uri: string; path: string } {
  const ref = store.create("tool");
  writeFileSync(ref.path, content);
  return ref;
}

/** The JSON of the "Next: {…}" (or "Next matches: {…}") line, undefined at the end. */
function nextCall(t: string): Record<string, unknown> | undefined {
  const m = /^Next(?: matches)?: (\{[^}]*\})/m.exec(t);
  return m ? JSON.parse(m[1]) : undefined;
}

test("following Next from the first page returns every line exactly once, long lines included", async () => {
  const lines = [
    "first",
    "",
    "é".repeat(40_000), // 80 KB: longer than a page
    ...Array.from({ length: 450 }, (_, i) => `row ${i + 1}`),
    `{"minified": "${"z".repeat(120_000)}"}`,
    "last",
  ];
  const { uri } = artifact(`${lines.join("\n")}\n`);
  const got = new Map<number, string>();
  let params: Record<string, unknown> | undefined = { id: uri };
  let pages = 0;
  while (params) {
    const r = await call(params);
    assert.equal(r.isError, undefined, text(r));
    const t = text(r);
    const [header, ...body] = t.split("\n");
    assert.match(header, /of artifact:\/\/[\w-]+ \([\d.]+ KB\):$/, "the header says what is shown");
    assert.match(header, /of 455\b|of 455 lines/, "and of how many lines");
    for (const l of body) {
      const m = /^ *(\d+)\t(.*)$/.exec(l);
      if (m) got.set(Number(m[1]), (got.get(Number(m[1])) ?? "") + m[2]);
    }
    const next = nextCall(t);
    assert.deepEqual(next, r.details.next, "the text's next call is the details' one");
    if (!next) assert.match(t, /\nEnd of artifact:\/\/[\w-]+\.$/);
    params = next;
    assert.ok(++pages < 50);
  }
  assert.deepEqual(
    [...got.keys()],
    lines.map((_, i) => i + 1),
    "every line, in order",
  );
  assert.deepEqual([...got.values()], lines, "every byte of every line once");
});

test("page texts: the range shown, a cut marker, the next call and a way to skip the long line", async () => {
  const { id } = artifact(`short\n${"x".repeat(60_000)}\nafter\n`);
  const first = await call({ id, offset: 1, limit: 200 });
  assert.equal(
    text(first),
    `Line 1 of 3 of artifact://${id} (58.6 KB):\n1\tshort\nNext: {"id":"${id}","offset":2,"limit":200}`,
  );
  const cut = text(await call({ id, offset: 2 }));
  const lines = cut.split("\n");
  assert.equal(
    lines[0],
    `Bytes 1-51,200 of line 2 (60,000 bytes), of 3 lines of artifact://${id} (58.6 KB):`,
  );
  assert.equal(lines[1], `2\t${"x".repeat(51_200)}`);
  assert.equal(lines[2], "[line 2 continues: 8,800 more bytes]");
  assert.equal(
    lines[3],
    `Next: {"id":"${id}","offset":2,"column":51201} — or skip the rest of line 2: {"id":"${id}","offset":3}`,
  );
  const rest = text(await call({ id, offset: 2, column: 51_201 }));
  assert.equal(
    rest.split("\n")[0],
    `Bytes 51,201-60,000 of line 2 (its end), then line 3, of 3 lines of artifact://${id} (58.6 KB):`,
  );
  assert.match(rest, /\n3\tafter\nEnd of artifact:\/\//);
  const empty = artifact("");
  assert.equal(text(await call({ id: empty.id })), `artifact://${empty.id} is empty (0 lines).`);
});

test('the form other results print, {"id":"<id>","offset":<line>}, reads from that line', async () => {
  const { id } = artifact(Array.from({ length: 500 }, (_, i) => `line ${i + 1}\n`).join(""));
  const r = await call(JSON.parse(`{"id":"${id}","offset":321}`));
  const t = text(r);
  assert.match(t, /^Lines 321-500 of 500 of artifact:\/\//);
  assert.match(t, /\n321\tline 321\n/);
  assert.match(t, /\nEnd of artifact:\/\//);
});

test("a search lists matching lines with numbers, the total, and the call for the next ones", async () => {
  const lines = Array.from({ length: 3000 }, (_, i) =>
    i % 7 === 0 ? `Traceback at ${i + 1}` : `fine ${i + 1}`,
  );
  const { id } = artifact(`${lines.join("\n")}\n`);
  const expected = lines.flatMap((l, i) => (l.startsWith("Traceback") ? [i + 1] : []));
  const listed: number[] = [];
  let params: Record<string, unknown> | undefined = { id, pattern: "(?i)traceback", limit: 100 };
  let first = "";
  while (params) {
    const t = text(await call(params));
    first ||= t;
    for (const m of t.matchAll(/^ *(\d+)\tTraceback at (\d+)$/gm)) {
      assert.equal(m[1], m[2], "the number is the line's");
      listed.push(Number(m[1]));
    }
    params = nextCall(t);
    if (!params) assert.match(t, /\nNo more matches\.$/);
  }
  assert.deepEqual(listed, expected);
  assert.match(
    first,
    new RegExp(`^429 lines of 3,000 in artifact://${id} match "\\(\\?i\\)traceback"\\. Matches 1-100:\\n`),
  );
  assert.match(
    first,
    new RegExp(`\\nNext matches: \\{"id":"${id}","pattern":"\\(\\?i\\)traceback","offset":701\\}$`),
  );
  const none = text(await call({ id, pattern: "traceback" }));
  assert.equal(
    none,
    `No line of artifact://${id} (3,000 lines) matches "traceback" (case-sensitive).\nStart the pattern with (?i) to ignore case.`,
  );
  const tail = text(await call({ id, pattern: "Traceback at 1$", offset: 2 }));
  assert.match(
    tail,
    /^No line from line 2 on of artifact:\/\/.* matches "Traceback at 1\$" \(case-sensitive\); 1 line before line 2 does: \{"id":".*","pattern":"Traceback at 1\$","offset":1\}$/,
  );
});

test("a match in a long line shows the part around it and the call that reads there", async () => {
  const { id } = artifact(`${"a".repeat(5000)}NEEDLE${"b".repeat(5000)}\n`);
  const t = text(await call({ id, pattern: "NEEDLE" }));
  const m =
    /^1\t…(a+NEEDLE b*|a+NEEDLEb+)… \[line 1 is 10,006 bytes; the match is at byte 5,001; read there: (\{.*\})\]$/m.exec(
      t,
    );
  assert.ok(m, t);
  const at = JSON.parse(m[2]);
  assert.deepEqual(at, { id, offset: 1, column: 4901 });
  const page = text(await call(at));
  assert.match(page.split("\n")[1], /^1\ta{100}NEEDLEb+$/);
});

test("every bad call is an Error: that says what to do, and the artifact stays as it was", async () => {
  const { id, path } = artifact("one\ntwo\n");
  const before = readFileSync(path);
  const cases: [unknown, RegExp][] = [
    [{}, /^Error: id is required\. Pass \{"id":"<id>","offset":<line>\}\.$/],
    [
      { id, line: 2 },
      /^Error: Unknown parameter "line" \(did you mean offset\?\)\. The artifact tool takes: id, offset, column, limit, pattern\./,
    ],
    [{ id, path: "x" }, /^Error: Unknown parameter "path"\. The artifact tool takes:/],
    [{ id, offset: "2" }, /^Error: offset must be an integer of at least 1; got "2"\.$/],
    [{ id, offset: 0 }, /^Error: offset must be an integer of at least 1; got 0\.$/],
    [{ id, limit: 1.5 }, /^Error: limit must be an integer of at least 1; got 1\.5\.$/],
    [{ id, pattern: "" }, /^Error: pattern must be a non-empty string; got ""\.$/],
    [
      { id: "../../etc/passwd" },
      /^Error: "\.\.\/\.\.\/etc\/passwd" is not an artifact id\. Pass the artifact:\/\/<id>/,
    ],
    [
      { id: "artifact://nope" },
      /^Error: artifact:\/\/nope not found\. Pass the id exactly as a result printed it/,
    ],
    [
      { id, offset: 3 },
      new RegExp(
        `^Error: offset 3 is past the end: artifact://${id} has 2 lines \\(\\d+ bytes\\)\\. Its last page: \\{"id":"${id}","offset":1\\}$`,
      ),
    ],
    [
      { id, offset: 1, column: 9 },
      /^Error: column 9 is past the end of line 1 of artifact:\/\/.*, which has 3 bytes\. Read the line from its start: \{"id":".*","offset":1\}$/,
    ],
    [
      { id, pattern: "(x" },
      /^Error: pattern "\(x" is not a valid JavaScript regular expression \(.*Unterminated group\)\. Escape special characters/,
    ],
    [
      { id, pattern: "x", column: 2 },
      /^Error: column continues a cut line when paging; it does not combine with pattern/,
    ],
    [
      { id, pattern: "o", offset: 5 },
      /^Error: offset 5 is past the end: .* has 2 lines\. Search from the top: \{"id":".*","pattern":"o","offset":1\}$/,
    ],
  ];
  for (const [params, re] of cases) {
    const r = await call(params);
    assert.equal(r.isError, true, JSON.stringify(params));
    assert.match(text(r), re, JSON.stringify(params));
  }
  assert.ok(readFileSync(path).equals(before));
});

test("the artifact tool is in every toolbox, with a description a model can act on", async () => {
  const toolbox = createToolbox({ settings: testSettings(), cwd: root, runtime: { stateRoot: root } });
  try {
    const t = toolbox.tools.find((x) => x.name === "artifact");
    assert.ok(t, "createToolbox has the artifact tool");
    assert.equal(t.label, "Artifact");
    assert.match(t.description, /artifact:\/\/<id>/);
    assert.match(t.description, /Next/);
    assert.match(t.description, /\(\?i\)/);
    assert.deepEqual(Object.keys(t.parameters.properties), ["id", "offset", "column", "limit", "pattern"]);
    assert.equal(t.parameters.additionalProperties, false);
    const { id } = artifact("hello\n");
    const r = await t.execute("t", { id: `artifact://${id}` });
    assert.equal(
      (r.content[0] as { text: string }).text,
      `Line 1 of 1 of artifact://${id} (6 bytes):\n1\thello\nEnd of artifact://${id}.`,
    );
  } finally {
    await toolbox.dispose();
  }
});
