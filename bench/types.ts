/** One benchmark section: our figure next to a reference client's, measured in the same run. */
export interface BenchRow {
  name: string;
  ours: number;
  reference: number;
  unit: string;
  /** e.g. "≤ 1.10×" */
  goal: string;
  /** ours / reference */
  ratio: number;
}

export interface BenchSection {
  title: string;
  rows: BenchRow[];
  notes?: string[];
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function row(name: string, ours: number, reference: number, unit: string, goal: string): BenchRow {
  return { name, ours, reference, unit, goal, ratio: reference > 0 ? ours / reference : Number.NaN };
}

/** A numeric option: `--name N` on the command line, else NBAGENT_BENCH_NAME, else `fallback`. */
export function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number(process.env[`NBAGENT_BENCH_${name.toUpperCase()}`]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
