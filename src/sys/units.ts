/**
 * Units in the words nbagent writes: counts with their noun, and byte sizes. Every byte unit here is
 * a power of 1024, whatever its label ("KB" is 1024 bytes, as "KiB").
 *
 * The texts grew more than one convention, and each is kept here as it is: a text the model or the
 * user reads does not change by moving its formatter. What differs between them:
 * - counts: `plural` writes thousands separators ("1,234 lines"), `pluralBare` does not ("1234 lines");
 * - sizes that pick their unit: `bytesWholeKB` rounds kilobytes to whole ones ("12 KB"), `bytesTenthKB`
 *   gives them a decimal ("12.3 KB") and stops at MB, `bytesIec` labels KiB/MiB/GiB/TiB and drops a
 *   ".0" ("2 GiB", "1.5 GiB"), `bytesRough` writes no bytes and whole MB ("0 KB", "3 MB"), and
 *   `mibOrKib` writes MiB with a decimal, or KiB rounded up;
 * - a size in one unit (`inUnit`): whole or with one decimal, with or without a space ("50KB").
 */
import { thousands } from "./thousands.js";

export const KiB = 2 ** 10;
export const MiB = 2 ** 20;
export const GiB = 2 ** 30;
export const TiB = 2 ** 40;

/** "1 line", "1,234 lines", "2 processes" (`many` for an irregular plural): the count with separators. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${thousands(n)} ${n === 1 ? one : many}`;
}

/** "1 line", "1234 lines": as `plural`, the count written as it is (no separators). */
export function pluralBare(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export type ByteUnit = "KB" | "MB" | "GB" | "KiB" | "MiB" | "GiB" | "TiB";

const UNIT_BYTES: Record<ByteUnit, number> = { KB: KiB, KiB, MB: MiB, MiB, GB: GiB, GiB, TiB };

/**
 * `bytes` in one unit: rounded to a whole one ("50 KB"; `digits` 0) or with one decimal ("2.0 MiB";
 * `digits` 1). `gap` goes between number and unit (the python and notebook descriptions: "50KB").
 */
export function inUnit(bytes: number, unit: ByteUnit, digits: 0 | 1 = 0, gap = " "): string {
  const value = bytes / UNIT_BYTES[unit];
  return `${digits === 0 ? Math.round(value) : value.toFixed(1)}${gap}${unit}`;
}

/** "900 bytes", "12 KB", "3.4 MB", "1.2 GB": whole KB, then a decimal (a cell's output size, for the model). */
export function bytesWholeKB(bytes: number): string {
  if (bytes < KiB) return pluralBare(bytes, "byte");
  if (bytes < MiB) return inUnit(bytes, "KB");
  if (bytes < GiB) return inUnit(bytes, "MB", 1);
  return inUnit(bytes, "GB", 1);
}

/** "900 bytes", "12.3 KB", "3.4 MB", "2048.0 MB": a decimal from KB on, nothing above MB (an artifact's size). */
export function bytesTenthKB(bytes: number): string {
  if (bytes < KiB) return plural(bytes, "byte");
  if (bytes < MiB) return inUnit(bytes, "KB", 1);
  return inUnit(bytes, "MB", 1);
}

/** "900 bytes", "1.5 KiB", "512 MiB", "2 GiB": IEC units, a decimal only when it is not 0 (memory, limits). */
export function bytesIec(bytes: number): string {
  for (const unit of ["TiB", "GiB", "MiB", "KiB"] as const) {
    const size = UNIT_BYTES[unit];
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return plural(bytes, "byte");
}

/** "0 KB", "12 KB", "3 MB", "1.2 GB": whole KB and MB, a decimal for GB (the view page's memory). */
export function bytesRough(bytes: number): string {
  if (bytes < MiB) return inUnit(bytes, "KB");
  if (bytes < GiB) return inUnit(bytes, "MB");
  return inUnit(bytes, "GB", 1);
}

/** "3.1 MiB" from a tenth of a MiB on, else KiB rounded up ("1 KiB" for 10 bytes): a value left out of the view. */
export function mibOrKib(bytes: number): string {
  return bytes / MiB >= 0.1 ? inUnit(bytes, "MiB", 1) : `${Math.ceil(bytes / KiB)} KiB`;
}
