/**
 * Waiting for something with a bound: `within(p, ms)` is true when `p` settled first, false when the
 * time ran out. The timer keeps the process alive while the wait lasts (whoever awaits it needs the
 * answer: a host whose only work is this wait must not exit under it) and is cleared the moment `p`
 * settles, so a wait that ends early holds nothing afterwards.
 */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const settle = () => {
      clearTimeout(timer);
      resolve(true);
    };
    p.then(settle, settle);
  });
}
