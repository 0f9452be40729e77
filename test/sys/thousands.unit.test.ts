// thousands(n) writes what n.toLocaleString("en-US") writes, without starting Intl.
import assert from "node:assert/strict";
import { test } from "node:test";
import { thousands } from "../../src/sys/thousands.js";

test("thousands matches toLocaleString('en-US') for whole numbers and falls back for the rest", () => {
  const samples = [
    0, -0, 1, 9, 10, 99, 100, 999, 1000, 1001, 9999, 12345, 100000, 999999, 1000000, 1073741824,
  ];
  for (let p = 1; p < 1e16; p *= 7) samples.push(Math.floor(p), Math.floor(p) + 1, -Math.floor(p));
  samples.push(
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
    2 ** 60,
    1.5,
    1234.5678,
    Number.NaN,
    Infinity,
  );
  for (const n of samples) assert.equal(thousands(n), n.toLocaleString("en-US"), String(n));
});
