/**
 * The runner builds dist/ only for the test files that need it (scripts/dist-users.mjs): those that
 * run the CLI (test/cli.ts) or read dist/, found from their imports name by name.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, test } from "node:test";
import { distUsers } from "../scripts/dist-users.mjs";

const ROOT = resolve(new URL("..", import.meta.url).pathname);

test("this checkout's files: the CLI through the helpers, dist/ paths, and files that need neither", () => {
  const r = distUsers(
    [
      "test/tools/python.test.ts",
      "test/run/cli-run.test.ts",
      "test/view/page.test.ts",
      "test/pi/descriptors.test.ts",
      "test/mcp/stdio.test.ts",
    ],
    ROOT,
  );
  assert.equal(r.get("test/tools/python.test.ts"), undefined);
  assert.match(
    r.get("test/run/cli-run.test.ts") ?? "",
    /^nbagent \(test\/run\/helpers\.ts\) → .*cliEntry \(test\/cli\.ts\)$/,
  );
  assert.match(r.get("test/view/page.test.ts") ?? "", /the path "[^"]*dist\/view\/page\/[^"]*"$/);
  // tempDir through test/pi/helpers.ts's re-export of test/run/helpers.ts: no CLI in it
  assert.equal(r.get("test/pi/descriptors.test.ts"), undefined);
  assert.match(r.get("test/mcp/stdio.test.ts") ?? "", /FROM_SOURCE \(test\/mcp\/helpers\.ts\) → cliCommand/);
});

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A checkout of its own: files relative to it. */
function checkout(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "nbagent-dist-users-"));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

test("name by name: only what a file takes from a helper counts, through re-exports, cycles and namespaces", () => {
  const root = checkout({
    "test/cli.ts": "export function cliEntry() { return []; }\n",
    "test/helpers.ts": [
      'import { cliEntry } from "./cli.js";',
      'export { plain as again } from "./more.js";',
      "export function plain() { return 1; }",
      // a cycle: ping reaches the CLI through pong, pong through ping
      "export function ping(n: number): unknown { return n ? pong(n - 1) : cliEntry(); }",
      "export function pong(n: number): unknown { return ping(n); }",
      "const bundle = () => cliEntry();",
      "export { bundle as run };",
    ].join("\n"),
    "test/more.ts": 'export function plain() { return "no dist/ in a comment: // dist/x"; }\n',
    "test/a.test.ts": 'import { plain, again } from "./helpers.js";\nplain(); again();\n',
    "test/b.test.ts": 'import { pong } from "./helpers.js";\npong(2);\n',
    "test/c.test.ts": 'import { run } from "./helpers.js";\nrun();\n',
    "test/d.test.ts": 'import * as h from "./helpers.js";\nh.plain();\n',
    "test/e.test.ts": 'import type { ping } from "./helpers.js";\nexport type P = typeof ping;\n',
    "test/f.test.ts":
      'const pi = "node_modules/some/dist/cli.js";\n// reads dist/ only in a comment\nexport { pi };\n',
    "test/g.test.ts": 'import { join } from "node:path";\nexport const page = join("x", "dist", "page");\n',
    "test/h.test.ts": 'export async function later() { return (await import("./helpers.js")).plain(); }\n',
    "test/i.test.ts": 'import "./side.js";\n',
    "test/side.ts": 'import { cliEntry } from "./cli.js";\ncliEntry();\n',
  });
  const files = "abcdefghi".split("").map((c) => `test/${c}.test.ts`);
  const r = distUsers(files, root);
  assert.equal(r.get("test/a.test.ts"), undefined);
  assert.equal(
    r.get("test/b.test.ts"),
    "pong (test/helpers.ts) → ping (test/helpers.ts) → cliEntry (test/cli.ts)",
  );
  assert.equal(r.get("test/c.test.ts"), "bundle (test/helpers.ts) → cliEntry (test/cli.ts)");
  // a namespace counts as a whole (over-counting is the safe side)
  assert.match(r.get("test/d.test.ts") ?? "", /cliEntry \(test\/cli\.ts\)$/);
  assert.equal(r.get("test/e.test.ts"), undefined);
  assert.equal(r.get("test/f.test.ts"), undefined);
  assert.equal(r.get("test/g.test.ts"), 'the path "dist"');
  assert.match(r.get("test/h.test.ts") ?? "", /cliEntry \(test\/cli\.ts\)$/);
  assert.equal(r.get("test/i.test.ts"), "the top-level code of test/side.ts → cliEntry (test/cli.ts)");
});
