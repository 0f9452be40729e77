/**
 * Multi-line strings as nbformat stores them: Python's `str.splitlines(keepends=True)`, which is
 * what nbformat's `split_lines` applies on write (cell source, stream text, text/* mime values).
 */

function isLineBreak(c: number): boolean {
  // \n \v \f \r, \x1c \x1d \x1e, \x85, \u2028 \u2029 — Python's str.splitlines boundaries
  return (c >= 10 && c <= 13) || (c >= 0x1c && c <= 0x1e) || c === 0x85 || c === 0x2028 || c === 0x2029;
}

/** `"a\nb"` → `["a\n", "b"]`, `"a\n"` → `["a\n"]`, `""` → `[]`. Joining the result gives the input back. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (!isLineBreak(c)) continue;
    if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < n) lines.push(text.slice(start));
  return lines;
}

/** A multi-line field (string or list of strings) as one string. */
export function joinLines(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.join("");
  return "";
}

function isJsonMime(mime: string): boolean {
  return mime === "application/json" || (mime.startsWith("application/") && mime.endsWith("+json"));
}

const SPLIT_NON_TEXT = new Set(["application/javascript", "image/svg+xml"]);

/** nbformat's `_split_mimebundle`: which mimebundle values are written as line lists. */
export function splitMimeBundle(data: Record<string, unknown>): void {
  for (const [mime, value] of Object.entries(data)) {
    if (
      typeof value === "string" &&
      !isJsonMime(mime) &&
      (mime.startsWith("text/") || SPLIT_NON_TEXT.has(mime))
    ) {
      data[mime] = splitLines(value);
    }
  }
}

/**
 * Splits the multi-line strings of one output the way nbformat.write does (for outputs nbagent
 * creates, e.g. when a later layer writes kernel outputs back).
 */
export function splitOutputLines(output: Record<string, unknown>): void {
  const type = output.output_type;
  if (type === "execute_result" || type === "display_data") {
    const data = output.data;
    if (data && typeof data === "object" && !Array.isArray(data))
      splitMimeBundle(data as Record<string, unknown>);
  } else if (type === "stream" && typeof output.text === "string") {
    output.text = splitLines(output.text);
  }
}
