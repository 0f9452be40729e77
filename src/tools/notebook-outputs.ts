/**
 * Saved outputs of a code cell as the `read` action shows them (docs/notebook-tool.md): a short
 * summary per output in the all-cells view (first lines, `[image/png 640x480]` markers, always the
 * error's name and value), or, for one cell, every output whole — stream text, text/plain,
 * tracebacks (ANSI stripped) — with other mimetypes named with their size, cut with a marker only
 * past the read budget.
 */
import { joinLines } from "../notebook/index.js";
import { thousands } from "../sys/thousands.js";
import { isObjectRepr } from "./output-text.js";

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
 * once it knows what is sent (notebook-actions/read.ts).
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

/** Where a bundle's image comes from, in the python tool's order (kernel/display.ts). */
const SENT_IMAGE_MIMES = ["image/png", "image/jpeg", "image/svg+xml"];

/** The image type of a bundle that is sent as an image content (undefined: none). */
function sentImage(data: Record<string, unknown>): string | undefined {
  return (
    SENT_IMAGE_MIMES.find((m) => typeof data[m] === "string" || Array.isArray(data[m])) ??
    Object.keys(data).find((m) => m.startsWith("image/") && typeof data[m] === "string")
  );
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

const TEXT_PREFERENCE = ["text/plain", "text/markdown", "text/latex"];

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function imageMarker(mime: string, value: unknown): string {
  const dims = typeof value === "string" ? imageSize(mime, value) : undefined;
  return dims ? `[${mime} ${dims.width}x${dims.height}]` : `[${mime}]`;
}

/** The bundle's text form (text/plain first), image markers, and the other mimetypes. */
function bundleParts(data: Record<string, unknown>, withSent = false) {
  const mimes = Object.keys(data);
  const sent = withSent ? sentImage(data) : undefined;
  const images = mimes.filter((m) => (m.startsWith("image/") && m !== "image/svg+xml") || m === sent);
  // a text/plain that is only an object's repr says less than the image or the other text form
  const repr = "text/plain" in data && isObjectRepr(joinLines(data["text/plain"]));
  const textMime = TEXT_PREFERENCE.find(
    (m) =>
      m in data &&
      !(m === "text/plain" && repr && (images.length > 0 || "text/markdown" in data || "text/latex" in data)),
  );
  // a repr left out is not named either: the image or the other text form stands for it
  const others = mimes.filter(
    (m) => !images.includes(m) && m !== textMime && !(m === "text/plain" && repr && textMime !== m),
  );
  return { textMime, images, others, sent };
}

/** Where an image is named: its label's placeholder when it is the one sent, else its marker. */
interface ImagePlace {
  images: ReadImages;
  cell: number;
  output: number;
}

function imageMarkers(data: Record<string, unknown>, images: string[], sent?: string, place?: ImagePlace) {
  return images.map((m) =>
    m === sent && place ? place.images.add(place.cell, place.output, m, data[m]) : imageMarker(m, data[m]),
  );
}

function summariseBundle(
  data: Record<string, unknown>,
  place?: ImagePlace,
): { lines: string[]; shortened: boolean } {
  const { textMime, images, others, sent } = bundleParts(data, place !== undefined);
  const lines = imageMarkers(data, images, sent, place);
  let shortened = false;
  if (textMime) {
    const r = firstLines(joinLines(data[textMime]), "");
    lines.push(...r.lines);
    shortened = r.shortened;
  }
  if (others.length > 0) lines.push(`[also: ${others.join(", ")}]`);
  return { lines, shortened: shortened || others.length > 0 };
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
  return clip(`${String(out.ename)}: ${value}`);
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
    lines.push(`… ${hidden} more output${hidden === 1 ? "" : "s"}`);
    shortened = true;
  }
  return { counts, lines, shortened };
}

interface Block {
  header: string;
  body: string;
}

/** One output whole: a header line (kind, markers) and its text. */
function wholeOutput(raw: unknown, k: number, place?: ImagePlace): Block {
  const out = (raw ?? {}) as Record<string, unknown>;
  const type = typeof out.output_type === "string" ? out.output_type : "unknown";
  const head = `-- output ${k} · `;
  if (type === "stream") {
    return { header: `${head}${String(out.name ?? "stream")}`, body: plainText(joinLines(out.text)) };
  }
  if (type === "error") {
    const tb = Array.isArray(out.traceback) ? out.traceback.map(String).join("\n") : "";
    return { header: `${head}error · ${errorLine(out)}`, body: plainText(tb) };
  }
  if (out.data && typeof out.data === "object") {
    const data = out.data as Record<string, unknown>;
    const { textMime, images, others, sent } = bundleParts(data, place !== undefined);
    const count = type === "execute_result" && typeof out.execution_count === "number";
    const markers = [
      ...imageMarkers(data, images, sent, place),
      ...others.map((m) => {
        const v = data[m];
        return `[${m}, ${size(Buffer.byteLength(typeof v === "string" ? v : (JSON.stringify(v) ?? "")))}]`;
      }),
    ];
    const header = [`${head}${type}${count ? ` (Out[${out.execution_count}])` : ""}`, ...markers].join(" · ");
    return { header, body: textMime ? plainText(joinLines(data[textMime])) : "" };
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
      `[… ${rest} more output${rest === 1 ? "" : "s"} (${shown}-${outputs.length - 1}) not shown to fit the read budget; cells[${cellIndex}].outputs in the file holds them]`,
    );
  }
  return lines;
}
