/** The render parts on their own: themes, width, highlighting, JSON trees, images, the cache. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  ansiTheme,
  cleanText,
  detectImageProtocol,
  highlightLines,
  imagePlaceholder,
  plainTheme,
  RenderCache,
  type RenderOptions,
  type RenderTheme,
  renderToolCall,
  renderToolResult,
  themeFromEnv,
  truncateToWidth,
  visibleWidth,
} from "../../src/render/index.js";
import { jsonTreeLines, PAGE_LINES } from "../../src/render/json-tree.js";

/** A theme that writes role names around text, so tests read which role a piece got. */
const tagTheme: RenderTheme = { fg: (role, text) => `<${role}>${text}</>`, bold: (text) => `<b>${text}</>` };

test("themeFromEnv: NO_COLOR, FORCE_COLOR=0 and TERM=dumb draw no colour; 256 or 16 colours otherwise", () => {
  for (const env of [
    { NO_COLOR: "1" },
    { NO_COLOR: "yes", TERM: "xterm-256color" },
    { FORCE_COLOR: "0" },
    { TERM: "dumb" },
  ])
    assert.equal(themeFromEnv(env).fg("error", "x"), "x", JSON.stringify(env));
  assert.equal(
    themeFromEnv({ NO_COLOR: "", TERM: "xterm-256color" }).fg("error", "x"),
    "\x1b[38;5;167mx\x1b[39m",
  );
  assert.equal(themeFromEnv({ TERM: "xterm" }).fg("error", "x"), "\x1b[31mx\x1b[39m");
  assert.equal(
    themeFromEnv({ COLORTERM: "truecolor", TERM: "xterm" }).fg("success", "x"),
    "\x1b[38;5;71mx\x1b[39m",
  );
  // colour is opened and closed on every line, so a wrapped or cut line keeps it
  assert.equal(ansiTheme().bold("a\nb"), "\x1b[1ma\x1b[22m\n\x1b[1mb\x1b[22m");
});

test("width: wide characters count two columns, escapes none; cuts never overflow", () => {
  assert.equal(visibleWidth("日本語"), 6);
  assert.equal(visibleWidth("📊 ok"), 5);
  assert.equal(visibleWidth(ansiTheme().fg("accent", "abc")), 3);
  assert.equal(visibleWidth("\x1b_Ga=T,f=100;AAAA\x1b\\"), 0);
  assert.equal(visibleWidth("\x1b]1337;File=inline=1:AAAA\x07"), 0);
  for (let w = 1; w <= 8; w++) {
    const cut = truncateToWidth("日本語のテキスト", w);
    assert.ok(visibleWidth(cut) <= w, `${w}: ${cut}`);
    assert.ok(cut.endsWith("…"));
  }
  assert.equal(truncateToWidth("short", 10), "short");
});

test("cleanText: kernel text loses escapes and controls; a carriage return keeps the last write", () => {
  assert.equal(cleanText("\x1b[31mred\x1b[0m"), "red");
  assert.equal(cleanText("10%\r50%\r100%\ndone\x07"), "100%\ndone");
  assert.equal(cleanText("a\tb"), "a   b");
  assert.equal(cleanText("\x1b]0;title\x07x\x1b_Gpayload\x1b\\"), "x");
});

test("highlighting: Python by its grammar, Markdown by its; plain themes get the source as is", () => {
  const py = highlightLines('def f(x):\n    return "s"  # c', "python", tagTheme);
  assert.equal(py.length, 2);
  assert.match(py[0], /<keyword>def<\/>/);
  assert.match(py[0], /<function>f<\/>/);
  assert.match(py[1], /<string>"s"<\/>/);
  assert.match(py[1], /<comment># c<\/>/);
  const md = highlightLines("# Title\n\n**bold** and `code`", "markdown", tagTheme);
  assert.match(md[0], /<heading># Title<\/>/);
  assert.match(md[2], /<emphasis>\*\*bold\*\*<\/>/);
  assert.deepEqual(highlightLines("def f():\n  pass", "python", plainTheme()), ["def f():", "  pass"]);
});

test("JSON trees: collapsed shows two levels, expanded everything up to a page; the rest is counted", () => {
  const o = (expanded: boolean): RenderOptions => ({ width: 80, expanded, theme: plainTheme() });
  const deep = "a string long enough that its object is not drawn on one line";
  const value = {
    a: { b: { c: { d: deep } } },
    list: Array.from({ length: 9 }, (_, i) => ({ i, sq: [i, i * i] })),
  };
  const collapsed = jsonTreeLines(value, o(false));
  assert.ok(collapsed.some((l) => l.includes('"b": ▸ {…} 1 key')));
  assert.ok(collapsed.some((l) => l.includes("… 4 more items")));
  const expanded = jsonTreeLines(value, o(true));
  assert.ok(expanded.some((l) => l.includes(`"d": "${deep}"`)));
  assert.ok(expanded.some((l) => l.includes('8: {"i": 8, "sq": [8, 64]}')));
  const big = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, { v: i, w: [i, "x"] }]));
  const paged = jsonTreeLines(big, o(true));
  assert.equal(paged.length, PAGE_LINES + 1);
  assert.equal(
    paged[PAGE_LINES],
    `… ${(1001 - PAGE_LINES).toLocaleString("en-US")} more lines of this JSON not drawn (1,001 lines in all)`,
  );
});

test("detectImageProtocol: kitty, iTerm2, sixel terminals; none in tmux, unknown terminals, or when forced", () => {
  assert.equal(detectImageProtocol({ TERM: "xterm-kitty" }), "kitty");
  assert.equal(detectImageProtocol({ KITTY_WINDOW_ID: "1", TERM: "xterm-256color" }), "kitty");
  assert.equal(detectImageProtocol({ TERM_PROGRAM: "ghostty" }), "kitty");
  assert.equal(detectImageProtocol({ TERM_PROGRAM: "iTerm.app" }), "iterm2");
  assert.equal(detectImageProtocol({ TERM_PROGRAM: "WezTerm" }), "iterm2");
  assert.equal(detectImageProtocol({ TERM: "foot" }), "sixel");
  assert.equal(detectImageProtocol({ TERM: "xterm-kitty", TMUX: "/tmp/tmux-0/default,1,0" }), "none");
  assert.equal(detectImageProtocol({ TERM: "xterm-256color" }), "none");
  assert.equal(detectImageProtocol({ TERM: "xterm-kitty", NBAGENT_IMAGES: "none" }), "none");
  assert.equal(detectImageProtocol({ NBAGENT_IMAGES: "iterm2" }), "iterm2");
});

const imageFixture = JSON.parse(readFileSync("test/render/fixtures/python-image.json", "utf8"));

test("images: kitty, iTerm2 and sixel draw inline in reserved rows; otherwise a placeholder with size and type", () => {
  assert.equal(imagePlaceholder({ mimeType: "image/png", width: 640, height: 480 }), "[image 640×480 PNG]");
  const base = { width: 60, expanded: false, theme: plainTheme(), now: 0 };
  const none = renderToolResult("python", imageFixture.result, base);
  assert.ok(none.includes("  [image 537×421 PNG]"), none.join("\n"));
  const data: string = imageFixture.result.content[1].data;
  const starts = { kitty: "\x1b_G", iterm2: "\x1b]1337;", sixel: "\x1bP" };
  for (const protocol of ["kitty", "iterm2", "sixel"] as const) {
    const lines = renderToolResult("python", imageFixture.result, { ...base, images: protocol });
    const at = lines.findIndex((l) => l.includes(starts[protocol]));
    assert.ok(at > 0, protocol);
    const rows = at - lines.indexOf("  ") + 1;
    if (protocol !== "sixel") assert.equal(Number(/(?:r=|height=)(\d+)/.exec(lines[at])?.[1]), rows);
    assert.ok(rows > 1 && rows <= 24);
    // rows-1 reserved lines, then the cursor goes up and the image is drawn
    assert.deepEqual(lines.slice(at - rows + 1, at), Array(rows - 1).fill("  "));
    assert.ok(lines[at].startsWith(`  \x1b[${rows - 1}A`));
    for (const l of lines) assert.ok(visibleWidth(l) <= 60);
    if (protocol === "sixel") {
      // the picture fits the rows reserved for it (16 pixels a row at most) and the columns (8 a column)
      const [, , , pw, ph] = /"(\d+);(\d+);(\d+);(\d+)/.exec(lines[at])!.map(Number);
      assert.ok(ph <= rows * 16 && pw <= 58 * 8, `${pw}x${ph} in ${rows} rows`);
      assert.ok(lines[at].endsWith("\x1b\\"));
      continue;
    }
    const payload =
      protocol === "kitty"
        ? [...lines[at].matchAll(/;([^;\x1b]*)\x1b\\/g)].map((m) => m[1])
        : [lines[at].split(":")[1].replace("\x07", "")];
    assert.equal(payload.join(""), data, "the whole image is sent");
    if (protocol === "kitty") assert.ok(payload.every((p) => p.length <= 4096));
  }
});

test("RenderCache: same input and options are drawn once; other width, expanded or input redraw", () => {
  const cache = new RenderCache();
  let draws = 0;
  const o: RenderOptions = { width: 60, expanded: false, theme: plainTheme() };
  const input = { a: 1 };
  const draw = () => [`draw ${++draws}`];
  assert.deepEqual(cache.get(input, o, draw), ["draw 1"]);
  assert.deepEqual(cache.get(input, o, draw), ["draw 1"]);
  assert.deepEqual(cache.get(input, { ...o, width: 120 }, draw), ["draw 2"]);
  assert.deepEqual(cache.get(input, { ...o, expanded: true }, draw), ["draw 3"]);
  assert.deepEqual(cache.get(input, o, draw), ["draw 1"]);
  assert.deepEqual(cache.get({ a: 1 }, o, draw), ["draw 4"]);
  // a spinner moves: another frame is another drawing
  assert.deepEqual(cache.get(input, { ...o, now: 0 }, draw), ["draw 5"]);
  assert.deepEqual(cache.get(input, { ...o, now: 80 }, draw), ["draw 6"]);
});

test("unknown tools get a plain view of their call and text", () => {
  const o: RenderOptions = { width: 40, expanded: false, theme: plainTheme() };
  assert.deepEqual(renderToolCall("bash", { command: "ls -la", timeout: 5 }, o), [
    "bash command=ls -la timeout=5",
  ]);
  const text = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n");
  const lines = renderToolResult("bash", { content: [{ type: "text", text }] }, o);
  assert.equal(lines.length, 9);
  assert.equal(lines[8], "│ … 12 more lines");
  assert.equal(
    renderToolResult("bash", { content: [{ type: "text", text }] }, { ...o, expanded: true }).length,
    20,
  );
  assert.deepEqual(
    renderToolResult("bash", { content: [{ type: "text", text: "Error: no" }], isError: true }, o),
    ["┃ Error: no"],
  );
});

test("collapsed output shows the tail and says how much is above; expanded shows every line", () => {
  const fx = JSON.parse(readFileSync("test/render/fixtures/python-long-output.json", "utf8"));
  const o: RenderOptions = { width: 120, expanded: false, theme: plainTheme() };
  const shownText = (fx.result.content[0].text as string).split("\n");
  const collapsed = renderToolResult("python", fx.result, o);
  assert.ok(
    collapsed.includes(`│ … ${(shownText.length - 8).toLocaleString("en-US")} more lines`),
    collapsed.join("\n"),
  );
  assert.ok(collapsed.some((l) => l.includes(`artifact://${fx.result.details.output.artifactId}`)));
  const expanded = renderToolResult("python", fx.result, { ...o, width: 400, expanded: true });
  for (const line of shownText)
    assert.ok(
      expanded.some((l) => l.includes(line)),
      line,
    );
});

test("export_notebook's closing line is drawn after the cells, not inside the last one's output", () => {
  const fx = JSON.parse(readFileSync("test/render/fixtures/python-one-cell.json", "utf8"));
  const line = "Exported this session's 1 cell to s.ipynb (with their outputs).";
  const result = {
    content: [{ type: "text", text: `${fx.result.content[0].text}\n${line}` }],
    details: { ...fx.result.details, exported: { path: "s.ipynb", cells: 1, stateLost: 0, omitted: [] } },
  };
  const o: RenderOptions = { width: 120, expanded: true, theme: plainTheme() };
  const lines = renderToolResult("python", result, o);
  assert.ok(lines.includes(line), lines.join("\n"));
  assert.ok(!lines.some((l) => l.startsWith("│") && l.includes("Exported")), lines.join("\n"));
});
