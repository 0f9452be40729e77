// HTML → markdown (src/kernel/display.ts): base64 images are set aside before the HTML is parsed and
// come back unchanged in the markdown, so a display carrying megabytes of images costs the parser
// only its markup (docs/output.md, "Rich outputs").
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeEntities, htmlToMarkdown } from "../../src/kernel/display.js";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

test("a table and an embedded image: the table as GFM, the data URI back exactly as it was", () => {
  const html = `<table><tr><th>a</th></tr><tr><td>1</td></tr></table><p><img alt="plot" src="data:image/png;base64,${PNG}"></p>`;
  const md = htmlToMarkdown(html);
  assert.match(md, /\| a \|\n\| --- \|\n\| 1 \|/);
  assert.ok(md.includes(`![plot](data:image/png;base64,${PNG})`), md);
});

test("text that looks like the placeholder is left alone; many large images all come back", () => {
  const big = "A".repeat(2_000_000);
  const imgs = Array.from({ length: 5 }, (_, i) => `<img src="data:image/png;base64,${big}${i}">`).join("");
  const md = htmlToMarkdown(`<p>nbagent-data-0 stays</p>${imgs}`);
  assert.match(md, /^nbagent-data-0 stays\n/);
  for (let i = 0; i < 5; i++) assert.ok(md.includes(`(data:image/png;base64,${big}${i})`), `image ${i}`);
});

// Tables as pandas writes them (docs/output.md, "Rich outputs"): one header row, names as written,
// a Styler's marked cells kept.
const STYLER_HTML = `<style type="text/css">
#T_1_row1_col0, #T_1_row2_col1 {
  background-color: yellow;
}
</style>
<table id="T_1">
  <thead>
    <tr><th class="blank level0" >&nbsp;</th><th id="T_1_level0_col0" class="col_heading level0 col0" >styled_col</th><th class="col_heading level0 col1" >b</th></tr>
    <tr><th class="index_name level0" >key</th><th class="blank col0" >&nbsp;</th><th class="blank col1" >&nbsp;</th></tr>
  </thead>
  <tbody>
    <tr><th id="T_1_level0_row0" class="row_heading level0 row0" >x</th><td id="T_1_row0_col0" >1</td><td id="T_1_row0_col1" >4</td></tr>
    <tr><th id="T_1_level0_row1" class="row_heading level0 row1" >y</th><td id="T_1_row1_col0" >5</td><td id="T_1_row1_col1" >2</td></tr>
    <tr><th id="T_1_level0_row2" class="row_heading level0 row2" >z</th><td id="T_1_row2_col0" >3</td><td id="T_1_row2_col1" >6</td></tr>
  </tbody>
</table>`;

test("a Styler with an index name: one header, no duplicate separator, marked cells bold and said", () => {
  assert.equal(
    htmlToMarkdown(STYLER_HTML),
    "| key | styled_col | b |\n| --- | --- | --- |\n| x | 1 | 4 |\n| y | **5** | 2 |\n| z | 3 | **6** |\n\n[cells in bold are styled: background-color: yellow]",
  );
});

test("several styles are numbered in the order the table shows them; a style on every cell marks nothing", () => {
  const two = STYLER_HTML.replace("</style>", "#T_1_row0_col1 {\n  background-color: red;\n}\n</style>");
  assert.match(
    htmlToMarkdown(two),
    /\| x \| 1 \| \*\*4\*\*\[1\] \|\n\| y \| \*\*5\*\*\[2\] \| 2 \|\n\| z \| 3 \| \*\*6\*\*\[2\] \|/,
  );
  assert.match(
    htmlToMarkdown(two),
    /\[cells in bold are styled: \[1\] background-color: red; \[2\] background-color: yellow\]$/,
  );
  const all = STYLER_HTML.replace(
    "#T_1_row1_col0, #T_1_row2_col1 {",
    "#T_1_row0_col0, #T_1_row0_col1, #T_1_row1_col0, #T_1_row1_col1, #T_1_row2_col0, #T_1_row2_col1 {",
  );
  assert.doesNotMatch(htmlToMarkdown(all), /\*\*|styled:/);
});

test("MultiIndex columns join their levels; a rowspan repeats its cell in each row; | is escaped", () => {
  const html = `<table><thead>
    <tr><th></th><th></th><th colspan="2">A</th></tr>
    <tr><th></th><th></th><th>x</th><th>y</th></tr>
    <tr><th>i</th><th>j</th><th></th><th></th></tr>
  </thead><tbody>
    <tr><th rowspan="2">r</th><th>s</th><td>1</td><td>a|b</td></tr>
    <tr><th>t</th><td>3</td><td>under_score *x*</td></tr>
  </tbody></table>`;
  assert.equal(
    htmlToMarkdown(html),
    "| i | j | A / x | A / y |\n| --- | --- | --- | --- |\n| r | s | 1 | a\\|b |\n| r | t | 3 | under_score *x* |",
  );
});

test("names are not escaped outside tables either; markdown's character references are decoded", () => {
  assert.equal(htmlToMarkdown("<p>col_name and *args* and 1. item</p>"), "col_name and *args* and 1. item");
  assert.equal(
    decodeEntities("| region &lt;chr&gt; | a &amp; b &#955; &#x3bb; &bogus; |"),
    "| region <chr> | a & b λ λ &bogus; |",
  );
});
