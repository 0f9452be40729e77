/**
 * Tracebacks for the model (docs/output.md, "Tracebacks"): the frames of the user's code and the
 * last library frame of each run of library frames stay whole; the library frames before it fold
 * into one line that says how many, in which files, and where the whole traceback is (the call's
 * artifact for a run, the notebook file for a read). And the one-line headline of an error: the
 * kernel's own prefix not doubled (IRkernel's `ERROR` + `Error in …`), IPython's temporary file
 * name replaced by the cell (`(3159153472.py, line 2)` → `(line 2 of the cell)`).
 */
import { pluralBare } from "../sys/units.js";

/** A frame's first line: IPython 8 (`Cell In [3], line 2`, `File /p/x.py:110, in f(…)`), IPython 7, plain Python. */
const FRAME_HEADS: { re: RegExp; user?: true }[] = [
  { re: /^Cell In ?\[\d*\], line \d+/, user: true },
  { re: /^File (.+?):\d+(?:,? in |$)/ },
  { re: /^File "(.+?)", line \d+/ },
  { re: /^<ipython-input-\d+-[0-9a-f]+> in /, user: true },
  { re: /^((?:\/|~\/)\S+\.pyx?) in \S/ },
];

/** Where library code lives: site/dist-packages, the standard library, Cython, frozen modules. */
const LIBRARY = /\/(?:site|dist)-packages\/|\/lib\/(?:python|pypy)\d[\d.]*\/|\.pyx$|^<frozen /;

interface Frame {
  /** Line index of its first and last line. */
  start: number;
  end: number;
  /** The file, shortened to its package path (`pandas/core/generic.py`); undefined for a cell. */
  file?: string;
  library: boolean;
}

function frameHead(line: string): { file?: string; library: boolean } | undefined {
  const t = line.trimStart();
  for (const { re, user } of FRAME_HEADS) {
    const m = re.exec(t);
    if (!m) continue;
    if (user) return { library: false };
    const path = m[1];
    // IPython's file for a cell's code (older versions name it so) is the user's
    if (/\/ipykernel_\d+\/\d+\.py$/.test(path)) return { library: false };
    const library = LIBRARY.test(path);
    const file = library
      ? path.replace(/^.*\/(?:site|dist)-packages\/|^.*\/lib\/(?:python|pypy)\d[\d.]*\//, "")
      : path;
    return { file, library };
  }
  return undefined;
}

/** The frames of a traceback's lines: a head, then its indented (or `-->`) lines up to a blank line. */
function frames(lines: string[]): Frame[] {
  const out: Frame[] = [];
  for (let i = 0; i < lines.length; i++) {
    const head = frameHead(lines[i]);
    if (!head) continue;
    let end = i;
    while (
      end + 1 < lines.length &&
      /^[\s-]/.test(lines[end + 1]) &&
      lines[end + 1].trim() !== "" &&
      !frameHead(lines[end + 1])
    )
      end++;
    out.push({ start: i, end, file: head.file, library: head.library });
    i = end;
  }
  return out;
}

export interface FoldedTraceback {
  /** Library frames folded, in all. */
  frames: number;
  /** The traceback with its fold lines, each ending `; the whole traceback: ${where}]`. */
  text: (where: string) => string;
}

/** Frames folded only when they take at least this many lines (a fold line must save something). */
const MIN_FOLDED_LINES = 3;
/** Files named in a fold line, at most. */
const FILES_NAMED = 4;

/**
 * The traceback (sanitised text, lines as the kernel sent them) with each run of library frames
 * but its last folded into one line; undefined when there is nothing to fold.
 */
export function foldTraceback(text: string): FoldedTraceback | undefined {
  const lines = text.split("\n");
  const all = frames(lines);
  /** Runs of library frames to fold: [first frame, last frame folded]. */
  const runs: Frame[][] = [];
  let run: Frame[] = [];
  const close = () => {
    const folded = run.slice(0, -1);
    if (folded.length > 0 && folded[folded.length - 1].end - folded[0].start + 1 >= MIN_FOLDED_LINES)
      runs.push(folded);
    run = [];
  };
  for (const [k, f] of all.entries()) {
    const prev = all[k - 1];
    // frames of one run follow each other with at most blank lines between them
    const adjacent = prev && lines.slice(prev.end + 1, f.start).every((l) => l.trim() === "");
    if (!f.library || !adjacent) close();
    if (f.library) run.push(f);
  }
  close();
  if (runs.length === 0) return undefined;
  const count = runs.reduce((n, r) => n + r.length, 0);
  return {
    frames: count,
    text: (where) => {
      const out: string[] = [];
      let at = 0;
      for (const r of runs) {
        const first = r[0].start;
        // the folded frames and the blank lines after them (up to the kept frame)
        let last = r[r.length - 1].end;
        while (last + 1 < lines.length && lines[last + 1].trim() === "") last++;
        out.push(...lines.slice(at, first));
        const indent = /^\s*/.exec(lines[first])?.[0] ?? "";
        out.push(`${indent}${foldLine(r, where)}`, "");
        at = last + 1;
      }
      out.push(...lines.slice(at));
      return out.join("\n");
    },
  };
}

function foldLine(run: Frame[], where: string): string {
  const files = [...new Set(run.map((f) => f.file ?? "?"))];
  const named =
    files.length > FILES_NAMED
      ? `${files.slice(0, FILES_NAMED).join(", ")} and ${files.length - FILES_NAMED} more`
      : files.join(", ");
  const n = run.length;
  return `… [${pluralBare(n, "library frame")} folded (${named}); the whole traceback: ${where}]`;
}

/**
 * An error in one line: `KeyError: 'key'`; a value that already starts with the name (IRkernel:
 * `ERROR` + `Error in eval(…)`) alone; IPython's temporary file in a SyntaxError's value as the cell.
 */
export function errorHeadline(name: string, value: string): string {
  const v = cellFileWords(value.trim());
  if (!name) return v;
  if (!v) return name;
  return v.toLowerCase().startsWith(name.toLowerCase()) ? v : `${name}: ${v}`;
}

/** `expected ':' (3159153472.py, line 2)` → `expected ':' (line 2 of the cell)`. */
export function cellFileWords(text: string): string {
  return text.replace(
    /\((?:\/\S*\/ipykernel_\d+\/)?(?:\d+\.py|<ipython-input-\d+-[0-9a-f]+>), line (\d+)\)/g,
    "(line $1 of the cell)",
  );
}
