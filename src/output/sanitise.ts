/**
 * Text clean-up applied to every chunk of kernel output before it is counted, kept or spilled:
 * ANSI escape sequences are removed, and carriage returns / backspaces are applied the way a
 * notebook front end shows them (a `\r` discards what came before it on the same line).
 */
import { stripVTControlCharacters } from "node:util";

/** Removes ANSI/VT escape sequences (colours, cursor moves, OSC titles). */
export function stripAnsi(text: string): string {
  // the common case (no escape introducer at all) skips the regex
  if (text.indexOf("\x1b") < 0 && text.indexOf("\x9b") < 0) return text;
  return stripVTControlCharacters(text);
}

/**
 * Applies `\r` overwrites and `\b` erasures per line. `\r\n` is a plain line break. Every other `\r`
 * keeps only the text after the last one on its line (progress bars collapse to their final state).
 */
export function applyOverwrites(text: string): string {
  let out = text;
  if (out.includes("\r")) {
    out = out.replace(/\r+\n/g, "\n");
    if (out.includes("\r")) {
      out = out
        .split("\n")
        .map((line) => {
          const i = line.lastIndexOf("\r");
          return i < 0 ? line : line.slice(i + 1);
        })
        .join("\n");
    }
  }
  if (out.includes("\b")) {
    let prev: string;
    do {
      prev = out;
      out = out.replace(/[^\n\x08]\x08/g, "");
    } while (out !== prev);
    out = out.replace(/\x08/g, "");
  }
  return out;
}

/** Full sanitisation of complete lines of text. */
export function sanitise(text: string): string {
  return applyOverwrites(stripAnsi(text));
}
