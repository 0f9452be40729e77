/**
 * `nbagent python` in a real terminal (tmux): the REPL's output streams in while its cell still runs,
 * Ctrl-C interrupts the cell and the kernel keeps its state for the next input, Ctrl-D leaves.
 * Everything is checked by what the pane shows, in order; no time bounds (docs/cli.md).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { rm } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { cliCommand } from "../cli.js";
import { tempDir } from "./helpers.js";

const execFileP = promisify(execFile);

function hasTmux(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** One tmux server of our own (its own socket), so the pane gets this process's environment. */
class Terminal {
  readonly socket = `nbagent-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  tmux(...args: string[]): Promise<string> {
    return execFileP("tmux", ["-L", this.socket, ...args]).then((r) => r.stdout);
  }

  async start(command: string, cwd: string): Promise<void> {
    // The shell stays after the command so its exit status can be read from the pane.
    const line = `cd ${quote(cwd)} && ${command}; echo "EXITED=$?"; sleep 100000`;
    await this.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", line);
  }

  /** The whole pane, scrollback included, wrapped lines joined. */
  screen(): Promise<string> {
    return this.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t");
  }

  /** Types text (literally) and presses Enter. */
  async type(text: string): Promise<void> {
    await this.tmux("send-keys", "-t", "t", "-l", text);
    await this.tmux("send-keys", "-t", "t", "Enter");
  }

  key(name: string): Promise<string> {
    return this.tmux("send-keys", "-t", "t", name);
  }

  /** Polls the pane until `test` holds; fails with the pane's text if it never does. */
  async until(what: string, test: (screen: string) => boolean): Promise<string> {
    // Only a guard against a hang: the test waits for events, not for a time.
    for (let i = 0; i < 1200; i++) {
      const s = await this.screen();
      if (test(s)) return s;
      await delay(50);
    }
    assert.fail(`the pane never showed ${what}:\n${await this.screen()}`);
  }

  async stop(): Promise<void> {
    await this.tmux("kill-server").catch(() => {});
  }
}

const prompts = (s: string) => s.split("\n").filter((l) => l.startsWith(">>> ")).length;

describe("nbagent python in a terminal", { skip: hasTmux() ? false : "tmux is not installed" }, () => {
  const term = new Terminal();
  let dir: string;
  before(async () => {
    dir = await tempDir("nbagent-tmux-");
  });
  after(async () => {
    await term.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("streams a running cell, Ctrl-C interrupts it, the kernel keeps its state", async () => {
    await term.start(`${cliCommand().map(quote).join(" ")} python`, dir);
    await term.until("the first prompt", (s) => prompts(s) === 1);

    await term.type("x = 42");
    await term.until("the second prompt", (s) => prompts(s) === 2);
    await term.type("import time; i = 0");
    await term.until("the third prompt", (s) => prompts(s) === 3);

    // A cell that never ends on its own: whatever it shows, it shows while running.
    await term.type("while True:");
    await term.type('    print("tick", i, flush=True); i += 1; time.sleep(0.2)');
    await term.type("");
    // Output lines are drawn in the python view's gutter.
    const streaming = await term.until("tick 1", (s) => /^│ tick 1$/m.test(s));
    const afterLoop = streaming.slice(streaming.lastIndexOf(">>> while True:"));
    assert.match(afterLoop, /^│ tick 0$/m, streaming);
    assert.equal(prompts(afterLoop), 1, `no prompt came back while the cell runs:\n${streaming}`);
    assert.match(afterLoop, /running · Ctrl-C interrupts/, "the live status line is drawn while it runs");

    await term.key("C-c");
    const stopped = await term.until("the prompt after the interrupt", (s) => prompts(s) === 4);
    const tail = stopped.slice(stopped.lastIndexOf(">>> while True:"));
    assert.match(tail, /KeyboardInterrupt/);
    assert.match(tail, /Cell 1 was interrupted: .*the kernel keeps its state\./);
    // The ticks stopped before the prompt: nothing streams in after it.
    const lastTick = tail.lastIndexOf("\n│ tick ");
    assert.ok(lastTick < tail.lastIndexOf("\n>>> "), tail);

    await term.type("print(x, i > 1)");
    const kept = await term.until(
      "the next input's output",
      (s) => prompts(s) === 5 && /^│ 42 True$/m.test(s),
    );
    assert.ok(kept.lastIndexOf("42 True") > kept.lastIndexOf(">>> print(x, i > 1)"));

    await term.key("C-d");
    await term.until("the REPL leaving with status 0", (s) => /^EXITED=0$/m.test(s));
  });
});
