/**
 * The REPL of `nbagent python` on a terminal: each input runs as one python tool call in the same
 * kernel (variables stay), its output streaming in. Ctrl-C while a cell runs interrupts it (the
 * kernel keeps its state) and a second Ctrl-C exits; at the prompt Ctrl-C drops the input, and a
 * second one in a row (or Ctrl-D, exit, quit) leaves. Rules: docs/cli.md.
 */
import { createInterface } from "node:readline";
import type { AnyTool } from "../tools/index.js";
import { InterruptError } from "./signals.js";
import { executeShown, type StreamView } from "./tool-view.js";

export interface ReplOptions {
  /** Params every call gets besides its cell (timeout, session). */
  base: Record<string, unknown>;
  expanded: boolean;
  json: boolean;
}

const PROMPT = ">>> ";
const MORE = "... ";
const LEAVE = new Set(["exit", "exit()", "quit", "quit()"]);

export async function runRepl(tool: AnyTool, options: ReplOptions): Promise<number> {
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  process.stdout.write(
    "nbagent python: one kernel, its state kept between inputs. Ctrl-C interrupts a running cell; Ctrl-D leaves.\n",
  );
  let running: { controller: AbortController; view?: StreamView } | undefined;
  let buffer: string[] = [];
  let sigintAtPrompt = false;
  /** The REPL was left by a command or Ctrl-C, not by the end of input (Ctrl-D). */
  let left = false;

  const prompt = () => {
    rl.setPrompt(buffer.length ? MORE : PROMPT);
    rl.prompt();
  };
  const onSignal = (sig: NodeJS.Signals) => {
    if (running) {
      if (running.controller.signal.aborted) process.exit(sig === "SIGINT" ? 130 : 143);
      running.controller.abort(new InterruptError(sig));
      running.view?.markInterrupted();
      return;
    }
    if (sig === "SIGTERM") process.exit(143);
    if (buffer.length || rl.line) {
      // Drop the input being typed, as Python's REPL does.
      buffer = [];
      sigintAtPrompt = false;
      rl.write(null, { ctrl: true, name: "u" });
      process.stdout.write("^C\n");
      prompt();
      return;
    }
    if (sigintAtPrompt) {
      left = true;
      process.stdout.write("\n");
      rl.close();
      return;
    }
    sigintAtPrompt = true;
    process.stdout.write("^C\n(Ctrl-C again, or Ctrl-D, leaves)\n");
    prompt();
  };
  rl.on("SIGINT", () => onSignal("SIGINT"));
  const onTerm = () => onSignal("SIGTERM");
  process.on("SIGTERM", onTerm);

  try {
    prompt();
    for await (const line of rl) {
      sigintAtPrompt = false;
      if (!buffer.length && LEAVE.has(line.trim())) {
        left = true;
        break;
      }
      buffer.push(line);
      if (needsMore(buffer)) {
        prompt();
        continue;
      }
      const code = buffer.join("\n");
      buffer = [];
      if (code.trim()) {
        const controller = new AbortController();
        running = { controller };
        const current = running;
        try {
          await executeShown(
            tool,
            { ...options.base, cells: [{ code }] },
            {
              json: options.json,
              expanded: options.expanded,
              signal: controller.signal,
              onView: (view) => {
                current.view = view;
              },
            },
          );
        } finally {
          running = undefined;
        }
      }
      prompt();
    }
    // Ctrl-D leaves the cursor after the prompt.
    if (!left) process.stdout.write("\n");
  } finally {
    process.off("SIGTERM", onTerm);
    rl.close();
  }
  return 0;
}

/**
 * Whether the input so far goes on: its first line opened a block (ends in ':' or '\'), a bracket
 * or a triple-quoted string is still open, or it is a block not yet ended by an empty line.
 */
export function needsMore(lines: string[]): boolean {
  const text = lines.join("\n");
  if (openBrackets(text)) return true;
  const last = lines[lines.length - 1];
  if (/[:\\]\s*(#.*)?$/.test(last) && last.trim() !== "") return true;
  // A block goes on until an empty line.
  return lines.length > 1 && last.trim() !== "";
}

/** Brackets or a triple-quoted string left open (strings and comments skipped). */
function openBrackets(text: string): boolean {
  let depth = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === "#") {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    if (ch === '"' || ch === "'") {
      const triple = text.startsWith(ch.repeat(3), i);
      const quote = triple ? ch.repeat(3) : ch;
      i += quote.length;
      while (i < text.length && !text.startsWith(quote, i)) {
        if (text[i] === "\\") i++;
        else if (!triple && text[i] === "\n") break;
        i++;
      }
      if (i >= text.length && triple) return true;
      i += quote.length;
      continue;
    }
    if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) depth--;
    i++;
  }
  return depth > 0;
}
