/**
 * How one call's text budget is shared between its cells (docs/output.md): tracebacks and notices
 * are reserved first (up to half the budget), then cells that fit keep all of their output and the
 * others split what is left equally (max-min fairness).
 */

/** Max-min fair shares of `total`: needs below the running equal share are met, the rest split it. */
export function fairShares(total: number, needs: number[]): number[] {
  const shares = needs.map(() => 0);
  const order = needs.map((_, i) => i).sort((a, b) => needs[a] - needs[b]);
  let left = Math.max(0, total);
  for (const [k, i] of order.entries()) {
    const share = Math.floor(left / (order.length - k));
    shares[i] = Math.max(0, Math.min(needs[i], share));
    left -= shares[i];
  }
  return shares;
}

export interface Allocation {
  /** Bytes each cell may show. */
  shares: number[];
  /** The part of each share reserved for its important lines (tracebacks, notices). */
  reserved: number[];
}

/**
 * `needs[i]`: bytes of cell i's output; `important[i]`: bytes of its tracebacks and notices.
 * Important text is reserved first, from at most half the budget, so a flood never hides an error.
 */
export function allocate(total: number, needs: number[], important: number[]): Allocation {
  const reserved = fairShares(
    Math.floor(total / 2),
    important.map((b, i) => Math.min(b, needs[i])),
  );
  const used = reserved.reduce((a, b) => a + b, 0);
  const rest = fairShares(
    total - used,
    needs.map((n, i) => n - reserved[i]),
  );
  return { shares: rest.map((r, i) => r + reserved[i]), reserved };
}
