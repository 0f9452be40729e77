/** Progress values from partial results: rising, cells counted, the running cell and its last line. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { lastOutputLine, ProgressTracker } from "../../src/mcp/progress.js";

const partial = (text: string, statuses?: string[], titles: (string | undefined)[] = []) => ({
  content: [{ type: "text", text }],
  details: statuses
    ? { cells: statuses.map((status, i) => ({ index: i + 1, status, title: titles[i] })) }
    : {},
});

test("counts finished cells, names the running one with its last output line, and always rises", () => {
  const t = new ProgressTracker();
  const values = [
    t.next(partial("", ["running", "pending"], ["load"])),
    t.next(partial("[1/2] load\nreading\n", ["running", "pending"], ["load"])),
    t.next(partial("[1/2] load\nreading\nrows: 10\n", ["running", "pending"], ["load"])),
    t.next(partial("[1/2] load\nrows: 10\n[2/2]\n", ["ok", "running"], ["load"])),
    t.next(partial("[1/2] load\nrows: 10\n[2/2]\ndone\n", ["ok", "ok"], ["load"])),
  ];
  assert.deepEqual(
    values.map((v) => v.message),
    [
      "cell 1/2 · load",
      "cell 1/2 · load: reading",
      "cell 1/2 · load: rows: 10",
      "cell 2/2",
      "cell 2/2: done",
    ],
  );
  assert.ok(values.every((v) => v.total === 2));
  for (let i = 1; i < values.length; i++) assert.ok(values[i].progress > values[i - 1].progress);
  assert.ok(values[2].progress < 1 && values[3].progress >= 1);
  assert.equal(values[4].progress, 2);
});

test("without cells in the details: a counter and the last line, no total", () => {
  const t = new ProgressTracker();
  assert.deepEqual(t.next(partial("a\nb\n")), { progress: 1, message: "b" });
  assert.deepEqual(t.next(partial("")), { progress: 2, message: undefined });
});

test("the last line is cut to 200 characters", () => {
  const line = lastOutputLine([{ type: "text", text: `${"y".repeat(300)}\n\n` }])!;
  assert.equal(line.length, 200);
  assert.ok(line.endsWith("…"));
});

test("a notebook run's cell header is not taken for output", () => {
  const t = new ProgressTracker();
  const title = "cell 3 (id ab)";
  assert.equal(t.next(partial(`[${title}]\n`, ["running"], [title])).message, "cell 1/1 · cell 3 (id ab)");
  assert.equal(
    t.next(partial(`[${title}]\n7\n`, ["running"], [title])).message,
    "cell 1/1 · cell 3 (id ab): 7",
  );
});
