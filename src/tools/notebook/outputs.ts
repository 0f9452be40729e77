/**
 * Saved outputs of a code cell as the `read` action shows them (docs/notebook-tool.md), each rich
 * output in the words a run gives it (bundle-text.ts: the same text form, HTML tables, image labels,
 * unseen types named): a short summary per output in the all-cells view (first lines, always the
 * error's headline), or, for one cell, every output whole — stream text, rich text, tracebacks (ANSI
 * stripped, library frames folded as a run folds them) — cut with a marker only past the read budget.
 */
import { joinLines } from "../../notebook/index.js";
import { thousands } from "../../sys/thousands.js";
import { pluralBare } from "../../sys/units.js";
import { bundleImage, bundleModelText } from "../bundle-text.js";
import { errorHeadline, foldTraceback } from "../traceback-text.js";

/** A saved image the read text names at its place (by a placeholder until it is sent or left out). */
export interface ReadImageRef {
  /** The placeholder in the text that becomes its label. */
  token: string;
  cell: number;
  output: number;
  mimeType: string;
  data: unknown;
  /** Its size from the file's bytes, when known. */
  width?: number;
  height?: number;
}

/**
 * Collects the images of the outputs being rendered, in document order: each output's first image
 * (PNG, JPEG, SVG, else another image type) gets a placeholder the read action turns into its label
 * once it knows what is sent (notebook/actions/read.ts).
 */
export class ReadImages {
  readonly refs: ReadImageRef[] = [];

  /** `first`: the number of the first placeholder (unique within one read's text). */
  constructor(private readonly first = 0) {}

  /** The placeholder for the image of output `output` of cell `cell`. */
  add(cell: number, output: number, mimeType: string, data: unknown): string {
    const token = `\u0000image ${this.first + this.refs.length}\u0000`;
    const dims = typeof data === "string" ? imageSize(mimeType, data) : undefined;
    this.refs.push({ token, cell, output, mimeType, data, ...dims });
    return token;
  }
}

export interface OutputSummary {
  counts: Record<string, number>;
  lines: string[];
  /** Something was left out (lines, outputs, long lines, mimetypes): reading the cell alone shows it. */
  shortened?: boolean;
}

const MAX_LINE = 200;
const LINES_PER_OUTPUT = 3;
const OUTPUTS_SHOWN = 6;

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-Z\\-_]/g;

/** Text as a terminal would leave it: no ANSI codes, each line as its last carriage return left it. */
export function plainText(text: string): string {
  const clean = text.replace(ANSI, "");
  if (!clean.includes("\r")) return clean;
  return clean
    .split("\n")
    .map((line) => {
      const parts = line.split("\r");
      for (let i = parts.length - 1; i >= 0; i--) if (parts[i] !== "") return parts[i];
      return "";
    })
    .join("\n");
}

function clip(line: string): string {
  const clean = plainText(line).replace(/\n$/, "");
  return clean.length > MAX_LINE ? `${clean.slice(0, MAX_LINE)}…` : clean;
}

/** Width × height from the first bytes of a base64 PNG, JPEG or GIF; undefined when unknown. */
export function imageSize(mime: string, base64: string): { width: number; height: number } | undefined {
  const b64 = base64.slice(0, mime === "image/jpeg" ? 400_000 : 64).replace(/\s+/g, "");
  const buf = Buffer.from(b64.slice(0, b64.length - (b64.length % 4)), "base64");
  if (mime === "image/png" && buf.length >= 24 && buf.toString("latin1", 12, 16) === "IHDR") {
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (mime === "image/gif" && buf.length >= 10 && buf.toString("latin1", 0, 3) === "GIF") {
    return { width: buf.readUInt16LE(6), height: buf.readUInt16LE(8) };
  }
  if (mime === "image/jpeg" && buf[0] === 0xff && buf[1] === 0xd8) {
    let i = 2;
    while (i + 9 < buf.length) {
      if (buf[i] !== 0xff) return undefined;
      const marker = buf[i + 1];
      if (marker === 0xff) {
        i++;
        continue;
      }
      const len = buf.readUInt16BE(i + 2);
      const isFrame =
        marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isFrame) return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
      i += 2 + len;
    }
  }
  return undefined;
}

function imageMarker(mime: string, value: unknown): string {
  const dims = typeof value === "string" ? imageSize(mime, value) : undefined;
  return dims ? `[${mime} ${dims.width}x${dims.height}]` : `[${mime}]`;
}

/** Where an image is named: by a placeholder of the images the read sends. */
interface ImagePlace {
  images: ReadImages;
  cell: number;
  output: number;
}

/** A saved bundle's values as a live display has them: multiline strings joined (JSON left as is). */
function joined(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [mime, value] of Object.entries(data))
    out[mime] = Array.isArray(value) && !/json$/.test(mime) ? joinLines(value) : value;
  return out;
}

/**
 * A saved bundle's text as a run shows it (bundle-text.ts): its image and the images its HTML
 * carries named by placeholders of the images the read sends (or by markers without `place`).
 */
function bundleText(raw: Record<string, unknown>, place?: ImagePlace): string {
  const data = joined(raw);
  const name = (mime: string, payload: unknown) =>
    place ? place.images.add(place.cell, place.output, mime, payload) : imageMarker(mime, payload);
  const sent = bundleImage(data);
  return plainText(
    bundleModelText(data, { image: sent ? name(sent, data[sent]) : undefined, embedded: name }),
  );
}

function summariseBundle(
  data: Record<string, unknown>,
  place?: ImagePlace,
): { lines: string[]; shortened: boolean } {
  // a summary has a few lines: blank ones would take their place
  const text = bundleText(data, place)
    .split("\n")
    .filter((l) => l.trim() !== "")
    .join("\n");
  return firstLines(text, "");
}

function firstLines(text: string, prefix: string): { lines: string[]; shortened: boolean } {
  const all = plainText(text).split("\n");
  if (all.length > 1 && all[all.length - 1] === "") all.pop();
  const lines = all.slice(0, LINES_PER_OUTPUT).map((l) => prefix + clip(l));
  const long = all.slice(0, LINES_PER_OUTPUT).some((l) => l.length > MAX_LINE);
  if (all.length > LINES_PER_OUTPUT) lines.push(`${prefix}… (${all.length - LINES_PER_OUTPUT} more lines)`);
  return { lines, shortened: long || all.length > LINES_PER_OUTPUT };
}

function errorLine(out: Record<string, unknown>): string {
  const value = String(out.evalue ?? "").split("\n")[0];
  return clip(errorHeadline(String(out.ename ?? ""), value));
}

/**
 * The all-cells view of a cell's outputs: a few lines each; an error's name and value always. With
 * `images`, each shown output's image is named by a placeholder collected there.
 */
export function summariseOutputs(outputs: unknown[], images?: ReadImages, cellIndex = 0): OutputSummary {
  const counts: Record<string, number> = {};
  const lines: string[] = [];
  let shortened = false;
  let hidden = 0;
  outputs.forEach((raw, i) => {
    const out = (raw ?? {}) as Record<string, unknown>;
    const type = typeof out.output_type === "string" ? out.output_type : "unknown";
    counts[type] = (counts[type] ?? 0) + 1;
    if (i >= OUTPUTS_SHOWN) {
      if (type === "error") lines.push(errorLine(out));
      else hidden++;
      return;
    }
    let r = { lines: [] as string[], shortened: false };
    if (type === "stream") r = firstLines(joinLines(out.text), `${String(out.name ?? "stream")}: `);
    else if (type === "error") r = { lines: [errorLine(out)], shortened: true };
    else if (out.data && typeof out.data === "object")
      r = summariseBundle(
        out.data as Record<string, unknown>,
        images ? { images, cell: cellIndex, output: i } : undefined,
      );
    lines.push(...r.lines);
    shortened ||= r.shortened;
  });
  if (hidden > 0) {
    lines.push(`… ${pluralBare(hidden, "more output")}`);
    shortened = true;
  }
  return { counts, lines, shortened };
}

interface Block {
  header: string;
  body: string;
}

/**
 * One output whole: a header line (kind) and its text as a run shows it; a traceback's library
 * frames folded (its whole is in the file: `cells[i].outputs[k]`).
 */
function wholeOutput(raw: unknown, k: number, cellIndex: number, place?: ImagePlace): Block {
  const out = (raw ?? {}) as Record<string, unknown>;
  const type = typeof out.output_type === "string" ? out.output_type : "unknown";
  const head = `-- output ${k} · `;
  if (type === "stream") {
    return { header: `${head}${String(out.name ?? "stream")}`, body: plainText(joinLines(out.text)) };
  }
  if (type === "error") {
    const tb = plainText(Array.isArray(out.traceback) ? out.traceback.map(String).join("\n") : "");
    const folded = foldTraceback(tb);
    const body = folded ? folded.text(`cells[${cellIndex}].outputs[${k}].traceback in the file`) : tb;
    return { header: `${head}error · ${errorLine(out)}`, body };
  }
  if (out.data && typeof out.data === "object") {
    const count = type === "execute_result" && typeof out.execution_count === "number";
    const header = `${head}${type}${count ? ` (Out[${out.execution_count}])` : ""}`;
    return { header, body: bundleText(out.data as Record<string, unknown>, place) };
  }
  return { header: `${head}${type}`, body: "" };
}

/** Shares `budget` characters among bodies: each gets its size or an equal share of what is left. */
function fairShares(sizes: number[], budget: number): number[] {
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[a] - sizes[b]);
  const shares = new Array<number>(sizes.length).fill(0);
  let left = Math.max(0, budget);
  order.forEach((i, rank) => {
    const share = Math.floor(left / (order.length - rank));
    shares[i] = Math.min(sizes[i], share);
    left -= shares[i];
  });
  return shares;
}

/** The body cut to `keep` characters around a marker: its head and its tail, at line ends when close. */
function cut(body: string, keep: number, where: string): string {
  const headLen = Math.floor(keep * 0.4);
  let headEnd = headLen;
  const nl = body.lastIndexOf("\n", headLen);
  if (nl > headLen - 200 && nl > 0) headEnd = nl + 1;
  let tailStart = body.length - (keep - headEnd);
  const nl2 = body.indexOf("\n", tailStart);
  if (nl2 !== -1 && nl2 < tailStart + 200) tailStart = nl2 + 1;
  const dropped = tailStart - headEnd;
  const head = body.slice(0, headEnd);
  return `${head}${head.endsWith("\n") ? "" : "\n"}[… ${thousands(dropped)} of ${thousands(body.length)} characters cut here to fit the read budget; ${where} in the file holds them all]\n${body.slice(tailStart)}`;
}

/**
 * Every output of cell `cellIndex` whole, within `budget` characters (cut fairly past it). With
 * `images`, each output's image is named by a placeholder collected there.
 */
export function wholeOutputs(
  outputs: unknown[],
  cellIndex: number,
  budget: number,
  images?: ReadImages,
): string[] {
  const blocks: Block[] = [];
  let headers = 0;
  let shown = 0;
  for (; shown < outputs.length; shown++) {
    const b = wholeOutput(
      outputs[shown],
      shown,
      cellIndex,
      images ? { images, cell: cellIndex, output: shown } : undefined,
    );
    if (shown > 0 && headers + b.header.length > budget / 2) break;
    blocks.push(b);
    headers += b.header.length + 1;
  }
  const bodies = blocks.map((b) => b.body.replace(/\n$/, ""));
  const shares = fairShares(
    bodies.map((b) => b.length),
    budget - headers,
  );
  const lines: string[] = [];
  blocks.forEach((b, k) => {
    lines.push(b.header);
    const body = bodies[k];
    if (body === "") return;
    lines.push(body.length <= shares[k] ? body : cut(body, shares[k], `cells[${cellIndex}].outputs[${k}]`));
  });
  if (shown < outputs.length) {
    const rest = outputs.length - shown;
    lines.push(
      `[… ${pluralBare(rest, "more output")} (${shown}-${outputs.length - 1}) not shown to fit the read budget; cells[${cellIndex}].outputs in the file holds them]`,
    );
  }
  return lines;
}
