/**
 * How stream output is folded before it is saved (docs/output.md, "Saved stream text"): `\r\n` is a
 * newline, text before a carriage return on the same line is overwritten by what follows it, and a
 * backspace deletes the character before it. A trailing `\r` is kept: more text may overwrite the line.
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

/**
 * One stream's text folded as if it had all arrived in one write, however the kernel split it
 * (ipykernel flushes on a timer, so a `\r` and what overwrites it may come in different messages).
 * No fold crosses a line break, so the text through the last `\n` is final and folded once; only the
 * raw text after it is kept and folded again with each chunk.
 */
export class StreamFolder {
  private settled = "";
  private tail = "";

  constructor(text = "") {
    this.append(text);
  }

  append(chunk: string): void {
    const raw = this.tail + chunk;
    const nl = raw.lastIndexOf("\n");
    if (nl === -1) {
      this.tail = raw;
      return;
    }
    this.settled += foldStreamText(raw.slice(0, nl + 1));
    this.tail = raw.slice(nl + 1);
  }

  get text(): string {
    return this.settled + foldStreamText(this.tail);
  }
}
