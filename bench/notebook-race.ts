/**
 * An external writer that does not take nbagent's save lock (an editor, Jupyter) races nbagent's
 * saves of the same notebook: how many of its writes are lost (docs/notebook-tool.md, "Files")?
 * A child process rewrites cell 0 with a counter, half the time in place and half via temp file +
 * rename, each time first checking that its previous write is still there; meanwhile this process
 * loads, edits cell 1 and saves, as fast as it can. A save based on a load older than the
 * external write it replaces loses that write: the writer sees its counter gone. Timing-dependent,
 * hence a bench, not a test. Run alone: node --import tsx bench/notebook-race.ts
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  loadNotebook,
  NotebookFileError,
  saveNotebook,
  setCellSource,
  thawCell,
} from "../src/notebook/index.js";
import { type BenchSection, row } from "./types.js";

const WRITES = 3_000;

const WRITER = `
const fs = require("node:fs");
const [path, n] = process.argv.slice(1);
let lost = 0, done = 0, unreadable = 0;
function once(k) {
  let nb;
  try { nb = JSON.parse(fs.readFileSync(path, "utf8")); } catch { unreadable++; return false; }
  const seen = Number(nb.cells[0].source.join(""));
  if (k > 0 && seen !== k) lost++;
  nb.cells[0].source = [String(k + 1)];
  const text = JSON.stringify(nb, null, 1) + "\\n";
  if (k % 2) fs.writeFileSync(path, text);
  else { const tmp = path + ".ext-tmp"; fs.writeFileSync(tmp, text); fs.renameSync(tmp, path); }
  return true;
}
let k = 0;
function step() {
  while (!once(k)) {}
  k++;
  if (k < Number(n)) setTimeout(step, Math.random() * 2);
  else { const last = Number(JSON.parse(fs.readFileSync(path, "utf8")).cells[0].source.join("")); if (last !== k) lost++;
    process.stdout.write(JSON.stringify({ lost, writes: k, unreadable }) + "\\n"); }
}
step();
`;

export async function run(): Promise<BenchSection> {
  const dir = await mkdtemp(join(tmpdir(), "nbagent-race-"));
  try {
    const path = join(dir, "race.ipynb");
    const nb = {
      cells: [
        { cell_type: "markdown", id: "ext", metadata: {}, source: ["0"] },
        { cell_type: "markdown", id: "ours", metadata: {}, source: ["0"] },
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5,
    };
    const { writeFile } = await import("node:fs/promises");
    await writeFile(path, `${JSON.stringify(nb, null, 1)}\n`);
    const child = spawn(process.execPath, ["-e", WRITER, path, String(WRITES)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    const finished = new Promise<void>((r) => child.on("close", () => r()));
    let running = true;
    void finished.then(() => {
      running = false;
    });
    let saved = 0;
    let refused = 0;
    let unreadable = 0;
    for (let i = 0; running; i++) {
      try {
        const loaded = await loadNotebook(path);
        setCellSource(thawCell(loaded.notebook, 1), String(i));
        await saveNotebook(loaded);
        saved++;
      } catch (e) {
        if (!(e instanceof NotebookFileError)) throw e;
        if (e.code === "conflict") refused++;
        else unreadable++;
      }
    }
    await finished;
    const ext = JSON.parse(out) as { lost: number; writes: number };
    return {
      title: "external writer racing saves (no lock on its side)",
      rows: [row("external writes lost", ext.lost, ext.writes, "writes", "informational")],
      notes: [
        `${ext.writes} external writes (half in place, half temp + rename); our saves: ${saved} written, ${refused} refused as changed on disk, ${unreadable} loads caught a half-written file`,
      ],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  run().then((s) => console.log(JSON.stringify(s, null, 2)));
}
