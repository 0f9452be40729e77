// HTML → markdown (src/kernel/display.ts): base64 images are set aside before the HTML is parsed and
// come back unchanged in the markdown, so a display carrying megabytes of images costs the parser
// only its markup (docs/output.md, "Rich outputs").
import assert from "node:assert/strict";
import { test } from "node:test";
import { htmlToMarkdown } from "../../src/kernel/display.js";

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
