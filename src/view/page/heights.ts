/**
 * Heights of a notebook's cells (measured, or estimated until a cell has been drawn) and their sums,
 * in a Fenwick tree: the offset of cell i and the cell at an offset in O(log n), so a 20,000-cell
 * notebook finds what the viewport shows without walking every cell.
 */
export class Heights {
  private tree: Float64Array;
  private values: number[];

  constructor(values: number[]) {
    this.values = values.slice();
    this.tree = new Float64Array(values.length + 1);
    this.rebuild();
  }

  private rebuild(): void {
    const n = this.values.length;
    this.tree = new Float64Array(n + 1);
    for (let i = 0; i < n; i++) {
      this.tree[i + 1] += this.values[i];
      const parent = i + 1 + ((i + 1) & -(i + 1));
      if (parent <= n) this.tree[parent] += this.tree[i + 1];
    }
  }

  get length(): number {
    return this.values.length;
  }

  get(i: number): number {
    return this.values[i];
  }

  set(i: number, height: number): void {
    const delta = height - this.values[i];
    if (delta === 0) return;
    this.values[i] = height;
    for (let k = i + 1; k < this.tree.length; k += k & -k) this.tree[k] += delta;
  }

  /** Sum of the heights of cells 0..i-1: where cell i starts. */
  offset(i: number): number {
    let sum = 0;
    for (let k = Math.min(i, this.values.length); k > 0; k -= k & -k) sum += this.tree[k];
    return sum;
  }

  total(): number {
    return this.offset(this.values.length);
  }

  /** The cell at offset y (the last cell when y is past the end). */
  indexAt(y: number): number {
    const n = this.values.length;
    if (n === 0) return 0;
    let pos = 0;
    let rest = y;
    for (let step = 1 << Math.floor(Math.log2(n)); step > 0; step >>= 1) {
      const next = pos + step;
      if (next <= n && this.tree[next] <= rest) {
        pos = next;
        rest -= this.tree[next];
      }
    }
    return Math.min(pos, n - 1);
  }

  splice(start: number, remove: number, ...insert: number[]): void {
    this.values.splice(start, remove, ...insert);
    this.rebuild();
  }
}
