/**
 * The REPL of `nbagent python` on a terminal: each input runs as one python tool call in the same
 * kernel (variables stay), its output streaming in. Ctrl-C while a cell runs interrupts it (the
 * kernel keeps its state) and a second Ctrl-C exits; at the prompt Ctrl-C drops the input, and a
 * second one in a row (or Ctrl-D, exit, quit) leaves. Rules: docs/cli.md.
 */
import { createInterface } from "node:readline";
import type { ToolEntry } from "../tools/index.js";
import { InterruptError } from "./posix-signals.js";
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

export async function runRepl(tool: ToolEntry, options: ReplOptions): Promise<number> {
  const stdin = process.stdin;
  process.stdout.write(
    "nbagent python: one kernel, its state kept between inputs. Ctrl-C interrupts a running cell; Ctrl-D leaves.\n",
  );
  const history: string[] = [];
  const typeahead: Typeahead = { lines: [], partial: "" };
  for (;;) {
    const code = await readInput(history, typeahead);
    if (code === undefined) return 0;
    if (!code.trim()) continue;
    // While the cell runs the keyboard is ours: Ctrl-C interrupts, other keys wait for the next prompt.
    const controller = new AbortController();
    let view: StreamView | undefined;
    let exitAfter: number | undefined;
    const onSignal = (sig: NodeJS.Signals) => {
      if (controller.signal.aborted) process.exit(sig === "SIGINT" ? 130 : 143);
      // Ctrl-C stops the cell and the REPL goes on with the same kernel; SIGTERM ends the REPL too
      // (its reason says so, and the result then says the kernel's state goes with it).
      if (sig === "SIGTERM") exitAfter = 143;
      controller.abort(sig === "SIGTERM" ? new InterruptError(sig) : new Error("Ctrl-C"));
      view?.markInterrupted();
    };
    const onData = (data: Buffer) => {
      const keys = data.toString("utf8");
      if (keys.includes("\x03")) return onSignal("SIGINT");
      const parts = (typeahead.partial + keys.replace(/\r\n?/g, "\n")).split("\n");
      typeahead.partial = parts.pop() ?? "";
      typeahead.lines.push(...parts);
    };
    const onInt = () => onSignal("SIGINT");
    const onTerm = () => onSignal("SIGTERM");
    stdin.setRawMode(true);
    stdin.on("data", onData);
    stdin.resume();
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    try {
      await executeShown(
        tool,
        { ...options.base, cells: [{ code }] },
        {
          json: options.json,
          expanded: options.expanded,
          signal: controller.signal,
          onView: (v) => {
            view = v;
          },
        },
      );
    } finally {
      stdin.off("data", onData);
      stdin.pause();
      stdin.setRawMode(false);
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    }
    if (exitAfter !== undefined) return exitAfter;
  }
}

/** Keys typed while a cell ran: whole lines are taken as inputs, in order, then the rest is edited. */
interface Typeahead {
  lines: string[];
  partial: string;
}

/**
 * Reads one input (several lines for a block) at the prompt; undefined when the person leaves
 * (Ctrl-D, exit, quit, or Ctrl-C twice in a row).
 */
function readInput(history: string[], typeahead: Typeahead): Promise<string | undefined> {
  return new Promise((resolveInput) => {
    const rl = createInterface({
      input: process.stdin,
      output: process.stdout,
      terminal: true,
      history,
      historySize: 1000,
      removeHistoryDuplicates: true,
    });
    let buffer: string[] = [];
    let sigint = false;
    let done = false;
    const finish = (code: string | undefined, newline = false) => {
      if (done) return;
      done = true;
      // The interface's history (newest first) is kept for the next prompt.
      const kept = (rl as unknown as { history?: string[] }).history;
      if (kept && kept !== history) history.splice(0, history.length, ...kept);
      rl.close();
      if (newline) process.stdout.write("\n");
      resolveInput(code);
    };
    const prompt = () => {
      rl.setPrompt(buffer.length ? MORE : PROMPT);
      rl.prompt();
    };
    /** Takes one line; true when it ended the input. */
    const take = (line: string): boolean => {
      sigint = false;
      if (!buffer.length && LEAVE.has(line.trim())) {
        finish(undefined);
        return true;
      }
      buffer.push(line);
      if (needsMore(buffer)) return false;
      finish(buffer.join("\n"));
      return true;
    };
    rl.on("line", (line) => {
      if (!take(line)) prompt();
    });
    rl.on("SIGINT", () => {
      if (buffer.length || rl.line) {
        // Drop the input being typed, as Python's REPL does.
        buffer = [];
        sigint = false;
        rl.write(null, { ctrl: true, name: "u" });
        process.stdout.write("^C\n");
        return prompt();
      }
      if (sigint) return finish(undefined, true);
      sigint = true;
      process.stdout.write("^C\n(Ctrl-C again, or Ctrl-D, leaves)\n");
      prompt();
    });
    // Ctrl-D (end of input) leaves the cursor after the prompt.
    rl.on("close", () => finish(undefined, true));
    while (typeahead.lines.length) {
      const line = typeahead.lines.shift() ?? "";
      process.stdout.write(`${buffer.length ? MORE : PROMPT}${line}\n`);
      if (take(line)) return;
    }
    prompt();
    if (typeahead.partial) rl.write(typeahead.partial);
    typeahead.partial = "";
  });
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
