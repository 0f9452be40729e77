/**
 * The benchmark command (`npm run bench [section…]`): runs each section next to the reference clients in
 * ../shared/anchors, in one go, and prints ratios (ours / reference). Results also go to
 * bench/out/results.json. Machines are noisy: compare ratios, not absolute times.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { BenchRow, BenchSection } from "./types.js";

const SECTIONS: Record<string, string> = {
  "notebook-edit": "./notebook-edit.js",
  "notebook-race": "./notebook-race.js",
  kernel: "./kernel.js",
  "python-tool": "./python-tool.js",
  "cli-cold": "./cli-cold.js",
  "notebook-run": "./notebook-run.js",
  "run-floors": "./run-floors.js",
  mcp: "./mcp.js",
  gateway: "./gateway.js",
  network: "./network.js",
  view: "./view.js",
};

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toFixed(3);
}

function print(section: BenchSection): void {
  console.log(`\n## ${section.title}`);
  console.log(
    `${"measure".padEnd(44)} ${"ours".padStart(10)} ${"reference".padStart(10)} unit   ratio   goal`,
  );
  for (const r of section.rows) {
    const ok = r.goal === "—" ? "" : goalMet(r) ? "ok" : "MISSED"; // "—": a figure beside the goal's
    console.log(
      `${r.name.padEnd(44)} ${fmt(r.ours).padStart(10)} ${fmt(r.reference).padStart(10)} ${r.unit.padEnd(6)} ${(fmt(r.ratio) + "×").padStart(7)}  ${r.goal} ${ok}`,
    );
  }
  for (const n of section.notes ?? []) console.log(`  - ${n}`);
}

function goalMet(r: BenchRow): boolean {
  const { ratio, goal } = r;
  // "≤ +0.5 ms": a bound on the difference from the reference measured in the same run.
  const diff = /^≤ \+([\d.]+)/.exec(goal);
  if (diff) return r.ours - r.reference <= Number(diff[1]);
  const m = /([≤<>≥])\s*([\d.]+)/.exec(goal);
  if (!m) return true;
  const v = Number(m[2]);
  return m[1] === "≤" || m[1] === "<" ? ratio <= v : ratio >= v;
}

async function main() {
  const wanted = process.argv.slice(2);
  const names = wanted.length ? wanted : Object.keys(SECTIONS);
  const results: BenchSection[] = [];
  for (const name of names) {
    const file = SECTIONS[name];
    if (!file) throw new Error(`unknown section ${name} (sections: ${Object.keys(SECTIONS).join(", ")})`);
    let mod: { run(): Promise<BenchSection> };
    try {
      mod = await import(file);
    } catch (err) {
      console.log(`\n## ${name}: not available (${(err as Error).message.split("\n")[0]})`);
      continue;
    }
    const section = await mod.run();
    print(section);
    results.push(section);
  }
  mkdirSync("bench/out", { recursive: true });
  writeFileSync("bench/out/results.json", `${JSON.stringify(results, null, 2)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
