// Tracebacks and error headlines for the model (src/tools/traceback-text.ts; docs/output.md,
// "Tracebacks"): IPython's formats as a kernel sends them (ANSI already removed).
import assert from "node:assert/strict";
import { test } from "node:test";
import { errorHeadline, foldTraceback } from "../../src/tools/traceback-text.js";

const LIB = "/usr/lib/python3/dist-packages/pandas";
const frame = (file: string, line: number, fn: string, code: string) =>
  `File ${LIB}/${file}:${line}, in ${fn}\n    ${line - 1} x = 1\n--> ${line}     ${code}\n    ${line + 1} y = 2\n`;
const CONTEXT = [
  "---------------------------------------------------------------------------",
  "KeyError                                  Traceback (most recent call last)",
  "Cell In[2], line 2",
  "      1 a = 1",
  "----> 2 pd.merge(a, b, on='key')",
  "",
  frame("core/reshape/merge.py", 110, "merge(left, right)", "op = _MergeOperation("),
  frame("core/reshape/merge.py", 703, "_MergeOperation.__init__(self)", ") = self._get_merge_keys()"),
  frame("core/generic.py", 1850, "NDFrame._get_label_or_level_values(self, key)", "raise KeyError(key)"),
  "KeyError: 'key'",
].join("\n");

test("IPython's context mode: the cell's frame and the last library frame whole, the others one line", () => {
  const folded = foldTraceback(CONTEXT);
  assert.ok(folded);
  assert.equal(folded.frames, 2);
  assert.equal(
    folded.text("artifact://a1, lines 3-30"),
    [
      "---------------------------------------------------------------------------",
      "KeyError                                  Traceback (most recent call last)",
      "Cell In[2], line 2",
      "      1 a = 1",
      "----> 2 pd.merge(a, b, on='key')",
      "",
      "… [2 library frames folded (pandas/core/reshape/merge.py); the whole traceback: artifact://a1, lines 3-30]",
      "",
      frame("core/generic.py", 1850, "NDFrame._get_label_or_level_values(self, key)", "raise KeyError(key)"),
      "KeyError: 'key'",
    ].join("\n"),
  );
});

test("plain mode folds the same; user files and a callback between library frames stay", () => {
  const plain = [
    "Traceback (most recent call last):",
    "",
    "  Cell In[1], line 3",
    "    run()",
    "",
    `  File ${LIB}/core/frame.py:10 in apply`,
    "    return f(x)",
    "",
    `  File ${LIB}/core/apply.py:20 in apply_standard`,
    "    return self.f(x)",
    "",
    "  File /home/me/project/helpers.py:5 in f",
    "    return lookup[x]",
    "",
    "KeyError: 3",
  ].join("\n");
  // a run of two library frames of two lines each: one folded frame of two lines saves nothing
  assert.equal(foldTraceback(plain), undefined);
  const longer = plain.replace("    return f(x)\n", "    return f(x)\n    more\n    more\n");
  const folded = foldTraceback(longer);
  assert.ok(folded);
  const t = folded.text("X");
  assert.match(
    t,
    /\n {2}… \[1 library frame folded \(pandas\/core\/frame\.py\); the whole traceback: X\]\n\n {2}File \S+apply\.py:20/,
  );
  assert.match(t, /File \/home\/me\/project\/helpers\.py:5 in f\n {4}return lookup\[x\]\n/);
});

test("nothing to fold: only the user's frames", () => {
  assert.equal(foldTraceback("Cell In[4], line 2\n----> 2 d['missing']\n\nKeyError: 'missing'"), undefined);
});

test("headlines: R's ERROR prefix not doubled, IPython's temporary file as the cell's line", () => {
  assert.equal(errorHeadline("KeyError", "'key'"), "KeyError: 'key'");
  assert.equal(
    errorHeadline("ERROR", "Error in eval(expr): object 'x' not found\n"),
    "Error in eval(expr): object 'x' not found",
  );
  assert.equal(
    errorHeadline("SyntaxError", "expected ':' (3159153472.py, line 2)"),
    "SyntaxError: expected ':' (line 2 of the cell)",
  );
  assert.equal(errorHeadline("EOFError", ""), "EOFError");
});
