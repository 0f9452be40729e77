/**
 * Snapshot tests of every view (docs/render.md): each fixture (a real tool call's arguments and
 * result, scripts/make-render-fixtures.ts) drawn at 60 and 120 columns, collapsed and expanded, in
 * colour and with NO_COLOR, compared with test/render/__snapshots__/<fixture>.txt (ESC written as
 * ␛). NBAGENT_UPDATE_SNAPSHOTS=1 rewrites them; otherwise any difference fails. No line may be wider
 * than the width, measured with the views' own width function.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  ansiTheme,
  type RenderOptions,
  renderToolCall,
  renderToolResult,
  themeFromEnv,
  visibleWidth,
} from "../../src/render/index.js";

const FIXTURES = "test/render/fixtures";
const SNAPSHOTS = "test/render/__snapshots__";
const UPDATE = process.env.NBAGENT_UPDATE_SNAPSHOTS === "1";
/** Fixed clock: spinners and running times are the same on every run. */
const NOW = 1_000_000;
const STARTED = NOW - 3_400;

interface Fixture {
  tool: string;
  args: unknown;
  result: { content: { type: "text"; text: string }[]; details?: unknown; isError?: boolean };
  partial?: Fixture["result"];
}

const themes = { color: ansiTheme({ colors: 256 }), "no-color": themeFromEnv({ NO_COLOR: "1" }) };

function draw(fx: Fixture): { text: string; problems: string[] } {
  const out: string[] = [];
  const problems: string[] = [];
  for (const width of [60, 120]) {
    for (const expanded of [false, true]) {
      for (const [name, theme] of Object.entries(themes)) {
        const o: RenderOptions = { width, expanded, theme, now: NOW, startedAt: STARTED };
        const views: [string, string[]][] = [
          ["call", renderToolCall(fx.tool, fx.args, o)],
          ["result", renderToolResult(fx.tool, fx.result, o)],
        ];
        if (fx.partial)
          views.push(["partial", renderToolResult(fx.tool, fx.partial, { ...o, partial: true })]);
        for (const [what, lines] of views) {
          const label = `${what} · ${width} · ${expanded ? "expanded" : "collapsed"} · ${name}`;
          for (const [k, l] of lines.entries()) {
            if (visibleWidth(l) > width) problems.push(`${label} line ${k + 1} is ${visibleWidth(l)} wide`);
            if (name === "no-color" && l.includes("\x1b"))
              problems.push(`${label} line ${k + 1} has an escape`);
          }
          out.push(`### ${label}`, ...lines);
        }
      }
    }
  }
  return { text: `${out.join("\n").replaceAll("\x1b", "␛")}\n`, problems };
}

const names = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".json"))
  .sort();

test("there are fixtures for every tool", () => {
  for (const tool of ["python", "notebook", "artifact", "runs"]) {
    assert.ok(
      names.some((n) => n.startsWith(tool)),
      `no fixture for ${tool}`,
    );
  }
});

for (const file of names) {
  test(`views of ${file}`, () => {
    const fx = JSON.parse(readFileSync(join(FIXTURES, file), "utf8")) as Fixture;
    const { text, problems } = draw(fx);
    assert.deepEqual(problems, []);
    const snap = join(SNAPSHOTS, file.replace(/\.json$/, ".txt"));
    if (UPDATE) {
      writeFileSync(snap, text);
      return;
    }
    assert.ok(existsSync(snap), `no snapshot ${snap}: run with NBAGENT_UPDATE_SNAPSHOTS=1`);
    assert.equal(
      text,
      readFileSync(snap, "utf8"),
      `${snap} differs (NBAGENT_UPDATE_SNAPSHOTS=1 rewrites it)`,
    );
  });
}

test("every snapshot has its fixture (none left over)", () => {
  if (UPDATE) return;
  const snaps = readdirSync(SNAPSHOTS).filter((f) => f.endsWith(".txt"));
  assert.deepEqual(snaps.sort(), names.map((n) => n.replace(/\.json$/, ".txt")).sort());
});
