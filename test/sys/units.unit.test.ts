// The units every text uses (src/sys/units.ts): each convention writes what its text has always said.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bytesIec,
  bytesRough,
  bytesTenthKB,
  bytesWholeKB,
  GiB,
  inUnit,
  KiB,
  MiB,
  mibOrKib,
  plural,
  pluralBare,
  TiB,
} from "../../src/sys/units.js";

function table(f: (n: number) => string, rows: [number, string][]): void {
  for (const [n, want] of rows) assert.equal(f(n), want, `${f.name}(${n})`);
}

test("plural writes the count with separators, pluralBare as it is; both take an irregular plural", () => {
  assert.equal(plural(1, "line"), "1 line");
  assert.equal(plural(0, "line"), "0 lines");
  assert.equal(plural(1234, "line"), "1,234 lines");
  assert.equal(plural(2, "process", "processes"), "2 processes");
  assert.equal(pluralBare(1, "cell"), "1 cell");
  assert.equal(pluralBare(1234, "cell"), "1234 cells");
  assert.equal(pluralBare(3, "process", "processes"), "3 processes");
});

test("inUnit: a size in one unit, whole or with one decimal, with or without the space", () => {
  assert.equal(inUnit(50 * KiB, "KB"), "50 KB");
  assert.equal(inUnit(50 * KiB, "KB", 0, ""), "50KB");
  assert.equal(inUnit(50 * KiB, "KiB"), "50 KiB");
  assert.equal(inUnit(4 * MiB, "MiB"), "4 MiB");
  assert.equal(inUnit(1536, "KB"), "2 KB");
  assert.equal(inUnit(2 * MiB, "MB", 1), "2.0 MB");
  assert.equal(inUnit(3.25 * MiB, "MiB", 1), "3.3 MiB");
});

test("bytesWholeKB: bytes, whole KB, then MB and GB with a decimal", () => {
  table(bytesWholeKB, [
    [0, "0 bytes"],
    [1, "1 byte"],
    [1023, "1023 bytes"],
    [1024, "1 KB"],
    [1536, "2 KB"],
    [MiB - 1, "1024 KB"],
    [MiB, "1.0 MB"],
    [1.55 * MiB, "1.6 MB"],
    [GiB, "1.0 GB"],
    [2.5 * TiB, "2560.0 GB"],
  ]);
});

test("bytesTenthKB: bytes, then KB and MB with a decimal (no GB)", () => {
  table(bytesTenthKB, [
    [1, "1 byte"],
    [1023, "1,023 bytes"],
    [1024, "1.0 KB"],
    [1536, "1.5 KB"],
    [MiB, "1.0 MB"],
    [2 * GiB, "2048.0 MB"],
  ]);
});

test("bytesIec: IEC units, a decimal only when it is not 0", () => {
  table(bytesIec, [
    [1, "1 byte"],
    [1023, "1,023 bytes"],
    [1024, "1 KiB"],
    [1536, "1.5 KiB"],
    [512 * MiB, "512 MiB"],
    [2 * GiB, "2 GiB"],
    [1.5 * GiB, "1.5 GiB"],
    [1.04 * GiB, "1 GiB"],
    [3 * TiB, "3 TiB"],
  ]);
});

test("bytesRough: whole KB (no bytes) and MB, GB with a decimal", () => {
  table(bytesRough, [
    [0, "0 KB"],
    [500, "0 KB"],
    [600, "1 KB"],
    [MiB - 1, "1024 KB"],
    [1.5 * MiB, "2 MB"],
    [GiB, "1.0 GB"],
  ]);
});

test("mibOrKib: MiB with a decimal from a tenth of one, else KiB rounded up", () => {
  table(mibOrKib, [
    [10, "1 KiB"],
    [1025, "2 KiB"],
    [0.1 * MiB, "0.1 MiB"],
    [0.1 * MiB - 1, "103 KiB"],
    [3.1 * MiB, "3.1 MiB"],
  ]);
});
