/**
 * What the view's tests share: Debian's Chromium driven by playwright-core (never a downloaded
 * browser; skipped without it, except under CI, where scripts/setup.sh installs it), and a real
 * `nbagent view --no-open` whose first line of stdout is its URL with the token.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { type Browser, chromium } from "playwright-core";
import { FROM_SOURCE } from "../mcp/helpers.js";

export const CHROMIUM = "/usr/bin/chromium";

export const SKIP_BROWSER: string | false =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : "chromium is not installed (bash scripts/setup.sh test installs it)";

/** Headless, and none of the background calls this machine's network refuses. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--headless",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Headless, with a fresh profile (CHROMIUM_ARGS). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export interface ViewProcess {
  process: ChildProcessWithoutNullStreams;
  /** http://127.0.0.1:<port> */
  base: string;
  token: string;
  /** Ctrl-C, and its exit. */
  stop(): Promise<void>;
}

/** Starts `nbagent view --no-open --port 0` and reads its URL and token off the first line. */
export async function startView(): Promise<ViewProcess> {
  const [cmd, ...pre] = FROM_SOURCE;
  const view = spawn(cmd, [...pre, "view", "--no-open", "--port", "0"], { stdio: "pipe" });
  view.stderr.resume();
  const first = await new Promise<string>((resolve) =>
    createInterface({ input: view.stdout }).once("line", (l) => resolve(l)),
  );
  const m = /^(http:\/\/127\.0\.0\.1:\d+)\/\?token=([0-9a-f]+)$/.exec(first);
  assert.ok(m, `the first line is the URL with its token: ${first}`);
  return {
    process: view,
    base: m[1],
    token: m[2],
    async stop() {
      if (view.exitCode !== null || view.signalCode !== null) return;
      const exited = new Promise((resolve) => view.once("exit", resolve));
      view.kill("SIGINT");
      await exited;
    },
  };
}
