/**
 * A whole number with thousands separators, as `n.toLocaleString("en-US")` writes it ("1,234,567"),
 * without `Intl`: the first toLocaleString in a process starts ICU's number formatting, ~20 ms of a
 * short CLI command. Other numbers (fractions, beyond 2^53) still go through toLocaleString.
 */
export function thousands(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return n.toLocaleString("en-US");
  const digits = String(Math.abs(n));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}
