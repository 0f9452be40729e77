/**
 * Makes docs/screenshots/*.png from real terminal output: each scene runs the CLI (from source) in
 * a tmux pane of its own server, its screen is captured with colours (capture-pane -e), turned into
 * HTML by ansi-to-html and photographed by headless Chromium. Run on demand, commit the PNGs:
 *   node --import tsx scripts/screenshots.ts [scene…]
 * Needs tmux and Chromium (installed here with apt-get when missing and we are root).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import AnsiToHtml from "ansi-to-html";

const ROOT = resolve(new URL("..", import.meta.url).pathname);
const OUT = join(ROOT, "docs/screenshots");
const CHROMIUM = "/usr/bin/chromium";
const TSX = import.meta.resolve("tsx");
const NBAGENT = `${process.execPath} --import ${TSX} ${join(ROOT, "src/cli/main.ts")}`;
const COLS = 100;

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0)
    throw new Error(`${CHROMIUM} is missing: install the Debian package chromium`);
  console.error("screenshots: installing chromium (apt-get)");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "chromium"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

/** A tmux server of our own, one pane of COLS × rows. */
let panes = 0;

class Pane {
  // A socket per scene: the last scene's server may still be exiting.
  private readonly socket = `nbagent-shots-${process.pid}-${panes++}`;

  constructor(
    private readonly cwd: string,
    readonly rows: number,
  ) {}

  private tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  }

  start(command: string, shown: string): void {
    const prompt = `printf '\\033[1;32m$\\033[0m %s\\n' ${sh(shown)}`;
    const line = `cd ${sh(this.cwd)} && ${prompt} && ${command}; printf '\\n__DONE__\\n'; sleep 100000`;
    this.tmux(
      "new-session",
      "-d",
      "-s",
      "s",
      "-x",
      String(COLS),
      "-y",
      String(this.rows),
      "-e",
      "TERM=xterm-256color",
      line,
    );
  }

  text(): string {
    return this.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "s");
  }

  colours(): string {
    return this.tmux("capture-pane", "-p", "-e", "-t", "s");
  }

  type(text: string): void {
    this.tmux("send-keys", "-t", "s", "-l", text);
    this.tmux("send-keys", "-t", "s", "Enter");
  }

  key(name: string): void {
    this.tmux("send-keys", "-t", "s", name);
  }

  async until(test: (screen: string) => boolean): Promise<string> {
    for (let i = 0; i < 1200; i++) {
      const s = this.text();
      if (test(s)) return s;
      await delay(100);
    }
    throw new Error(`screenshots: the pane never got there:\n${this.text()}`);
  }

  stop(): void {
    try {
      this.tmux("kill-server");
    } catch {}
  }
}

function sh(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const prompts = (s: string) => s.split("\n").filter((l) => l.startsWith(">>> ")).length;
const done = (s: string) => s.includes("__DONE__");

/** The pane's screen as a PNG: HTML in the terminal's colours, one screenshot by Chromium. */
function photograph(ansi: string, name: string, work: string): void {
  const lines = ansi
    .replace(/\n?__DONE__[\s\S]*$/, "")
    .replace(/\s+$/, "")
    .split("\n");
  // ansi-to-html has no faint: draw it grey.
  const body = lines.join("\n").replace(/\x1b\[2m/g, "\x1b[38;5;244m");
  const convert = new AnsiToHtml({ fg: "#d4d4d4", bg: "#1e1e1e", escapeXML: true, colors: palette() });
  const html = `<!doctype html><meta charset="utf-8"><style>
    body { margin: 0; background: #1e1e1e; }
    pre { margin: 0; padding: 14px 18px; color: #d4d4d4; font: 14px/1.35 "DejaVu Sans Mono", monospace; }
  </style><pre>${convert.toHtml(body)}</pre>`;
  const file = join(work, `${name}.html`);
  writeFileSync(file, html);
  const height = Math.ceil(lines.length * 14 * 1.35 + 30);
  const width = Math.ceil(COLS * 8.45 + 36);
  execFileSync(
    CHROMIUM,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--hide-scrollbars",
      `--window-size=${width},${height}`,
      `--screenshot=${join(OUT, `${name}.png`)}`,
      `file://${file}`,
    ],
    { stdio: "ignore" },
  );
  console.error(`screenshots: docs/screenshots/${name}.png`);
}

/** A dark terminal palette for the 16 basic colours. */
function palette(): Record<number, string> {
  const c = ["#1e1e1e", "#f14c4c", "#23d18b", "#e5e510", "#3b8eea", "#d670d6", "#29b8db", "#d4d4d4"];
  const bright = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"];
  return Object.fromEntries([...c, ...bright].map((v, i) => [i, v]));
}

function notebook(path: string, cells: [string, string][]): void {
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    cells: cells.map(([type, source], i) => ({
      cell_type: type,
      id: `cell-${i}`,
      metadata: {},
      source,
      ...(type === "code" ? { outputs: [], execution_count: null } : {}),
    })),
  };
  writeFileSync(path, `${JSON.stringify(nb, null, 1)}\n`);
}

type Scene = (pane: Pane) => Promise<void>;

const SCENES: Record<string, { rows: number; scene: Scene }> = {
  // The REPL: output streams in, Ctrl-C interrupts, the variable is still there.
  "python-repl": {
    rows: 40,
    scene: async (p) => {
      p.start(`${NBAGENT} python`, "nbagent python");
      await p.until((s) => prompts(s) === 1);
      p.type("data = [x * x for x in range(10)]");
      await p.until((s) => prompts(s) === 2);
      p.type("import time");
      await p.until((s) => prompts(s) === 3);
      p.type("for i in range(100):");
      p.type('    print(f"step {i}: {sum(data[:i])}", flush=True); time.sleep(0.3)');
      p.type("");
      await p.until((s) => s.includes("step 4:"));
      p.key("C-c");
      await p.until((s) => prompts(s) === 4);
      p.type("len(data), data[-1]");
      await p.until((s) => prompts(s) === 5);
    },
  },
  // A failing cell: the traceback in the output, the closing line saying what happened.
  "python-error": {
    rows: 30,
    scene: async (p) => {
      p.start(`${NBAGENT} python shop.py`, "nbagent python shop.py");
      await p.until(done);
    },
  },
  "notebook-read": {
    rows: 30,
    scene: async (p) => {
      p.start(
        `${NBAGENT} notebook run demo.ipynb >/dev/null && ${NBAGENT} notebook read demo.ipynb`,
        "nbagent notebook read demo.ipynb",
      );
      await p.until(done);
    },
  },
  "notebook-run": {
    rows: 30,
    scene: async (p) => {
      p.start(`${NBAGENT} notebook run demo.ipynb`, "nbagent notebook run demo.ipynb");
      await p.until(done);
    },
  },
  "run-progress": {
    rows: 26,
    scene: async (p) => {
      p.start(`${NBAGENT} run demo.ipynb broken.ipynb`, "nbagent run demo.ipynb broken.ipynb");
      await p.until(done);
    },
  },
};

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  for (const w of wanted)
    if (!SCENES[w]) throw new Error(`no scene ${w} (scenes: ${Object.keys(SCENES).join(", ")})`);
  ensureChromium();
  mkdirSync(OUT, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "nbagent-shots-"));
  try {
    notebook(join(work, "demo.ipynb"), [
      ["markdown", "# Sales by region\nA small demo: load, summarise, plot."],
      ["code", "import time\nregions = {'north': [12, 15, 11], 'south': [9, 14, 18], 'east': [20, 17, 16]}"],
      [
        "code",
        "totals = {r: sum(v) for r, v in regions.items()}\nfor r, t in sorted(totals.items()):\n    print(f'{r:6} {t:4}')",
      ],
      ["code", "time.sleep(0.5)\nbest = max(totals, key=totals.get)\nbest, totals[best]"],
    ]);
    writeFileSync(
      join(work, "shop.py"),
      [
        'prices = {"apple": 1.2, "pear": 0.8}',
        "def total(items):",
        "    return sum(prices[i] for i in items)",
        'print("two apples:", total(["apple", "apple"]))',
        'total(["apple", "kiwi"])',
        "",
      ].join("\n"),
    );
    notebook(join(work, "broken.ipynb"), [
      ["code", "values = [3, 1, 4, 1, 5]"],
      ["code", "mean = sum(values) / len(values)\nprint(f'mean {mean}')"],
      ["code", "ratio = mean / (values.count(9))"],
      ["code", "print('never reached')"],
    ]);
    for (const [name, { rows, scene }] of Object.entries(SCENES)) {
      if (wanted.length && !wanted.includes(name)) continue;
      const pane = new Pane(work, rows);
      try {
        await scene(pane);
        await delay(300); // let the last redraw land before the picture
        photograph(pane.colours(), name, work);
      } finally {
        pane.stop();
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
