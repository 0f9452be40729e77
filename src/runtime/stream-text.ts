/**
 * How Jupyter front ends fold terminal control characters in stream output before it is saved:
 * `\r\n` is a newline, text before a carriage return on the same line is overwritten by what follows it,
 * and a backspace deletes the character before it. (The same rules nbclient's stream coalescing applies.)
 * A trailing `\r` is kept: the next chunk of the stream may overwrite the line.
 */
export function foldStreamText(text: string): string {
  if (text.indexOf("\r") === -1 && text.indexOf("\b") === -1) return text;
  let out = text;
  if (out.indexOf("\b") !== -1) {
    let prev: string;
    do {
      prev = out;
      out = out.replace(/[^\n\x08]\x08/g, "");
    } while (out !== prev);
  }
  if (out.indexOf("\r") !== -1) {
    out = out.replace(/\r+\n/g, "\n").replace(/[^\n]*\r(?=[^\n])/g, "");
  }
  return out;
}
