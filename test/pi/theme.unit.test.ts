/**
 * pi's theme as the views' RenderTheme: every role of src/render has a colour pi's themes define
 * (pi's Theme throws on a colour it does not know, and pi then drops our view for its fallback),
 * every line is closed on its own, and NO_COLOR draws none.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Theme } from "@mariozechner/pi-coding-agent";
import { PI_COLORS, piRenderTheme } from "../../src/pi/theme.js";
import { THEME_ROLES } from "../../src/render/index.js";
import { ROOT } from "./helpers.js";

const THEMES = join(ROOT, "node_modules/@mariozechner/pi-coding-agent/dist/modes/interactive/theme");

/** A real pi Theme over the colour names a built-in theme file defines. */
function piTheme(file: string): Theme {
  const { colors } = JSON.parse(readFileSync(join(THEMES, file), "utf8")) as {
    colors: Record<string, unknown>;
  };
  const fg: Record<string, number> = {};
  const bg: Record<string, number> = {};
  for (const name of Object.keys(colors)) (name.endsWith("Bg") ? bg : fg)[name] = 33;
  return new Theme(fg as never, bg as never, "256color");
}

for (const file of ["dark.json", "light.json"]) {
  test(`every role has a colour pi's ${file} theme defines`, () => {
    const pt = piTheme(file);
    const theme = piRenderTheme(pt, {});
    for (const role of THEME_ROLES) {
      assert.ok(PI_COLORS[role], role);
      assert.equal(theme.fg(role, "x"), "\x1b[38;5;33mx\x1b[39m", role);
    }
    assert.equal(theme.bold("x"), pt.bold("x")); // pi's bold (chalk: plain when not a terminal)
  });
}

test("each line is coloured on its own; empty lines stay empty", () => {
  const theme = piRenderTheme(piTheme("dark.json"), {});
  assert.equal(theme.fg("accent", "a\n\nb"), "\x1b[38;5;33ma\x1b[39m\n\n\x1b[38;5;33mb\x1b[39m");
  assert.equal(theme.fg("accent", ""), "");
});

test("NO_COLOR draws no colour", () => {
  const theme = piRenderTheme(piTheme("dark.json"), { NO_COLOR: "1" });
  assert.equal(theme.fg("error", "x"), "x");
  assert.equal(theme.bold("x"), "x");
});
